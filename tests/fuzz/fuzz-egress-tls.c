/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: egress_tls_client_hello_sni() on the first bytes of a
 * CONNECT tunnel. Beyond ASan/UBSan: a name is reported only for a whole
 * record that the input holds, it is a lower-case DNS name, the name buffer
 * is untouched otherwise, and one byte less than the record asks for more. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns-name.h"
#include "egress-tls.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                \
        do {                    \
                if (!(x))       \
                        abort(); \
        } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char name[254], again[254];
        size_t l;
        int r;

        if (size > 2 * EGRESS_TLS_PEEK_MAX)
                return 0;
        memset(name, 0x5a, sizeof name);
        r = egress_tls_client_hello_sni(data, size, name);
        if (r <= 0) {
                CHECK(r == 0 || r == -ENOENT || r == -EBADMSG || r == -ECHRNG);
                for (size_t i = 0; i < sizeof name; i++)
                        CHECK(name[i] == 0x5a);
                if (r == 0)
                        CHECK(size < EGRESS_TLS_PEEK_MAX);
                return 0;
        }

        CHECK(r >= 5 + 4 && (size_t) r <= size && r <= EGRESS_TLS_PEEK_MAX);
        CHECK((size_t) r == 5 + ((size_t) data[3] << 8 | data[4]));
        l = strnlen(name, sizeof name);
        CHECK(l < sizeof name && dns_name_is_valid(name, l));
        for (size_t i = 0; i < l; i++)
                CHECK(!(name[i] >= 'A' && name[i] <= 'Z'));

        CHECK(egress_tls_client_hello_sni(data, (size_t) r, again) == r && streq(again, name));
        CHECK(egress_tls_client_hello_sni(data, (size_t) r - 1, again) == 0);
        return 0;
}
