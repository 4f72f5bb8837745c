/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-tls.h"

#include <errno.h>

/* Placeholder until the parser lands: refuses every hello (fails closed). */
int egress_tls_client_hello_sni(const uint8_t *buf, size_t n, char ret_name[static 254]) {
        (void) buf;
        (void) n;
        (void) ret_name;
        return -EBADMSG;
}
