/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: egress_request_parse() on the bytes a run's client sends
 * the proxy. Beyond ASan/UBSan: a head is reported only where its blank line
 * ends, no shorter prefix completes it, the host is a DNS name or an IP
 * literal in lower case, and the upstream head is CRLF-framed, starts with
 * the method and an origin-form target, ends with "Connection: close", and
 * carries neither Proxy-* nor Transfer-Encoding nor a second Host or
 * Content-Length. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dns-name.h"
#include "egress-address.h"
#include "egress-request.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                \
        do {                    \
                if (!(x))       \
                        abort(); \
        } while (0)

static size_t count(const char *s, size_t n, const char *needle) {
        size_t c = 0, l = strlen(needle);

        for (size_t i = 0; i + l <= n; i++)
                if (strncasecmp(s + i, needle, l) == 0)
                        c++;
        return c;
}

static void check_upstream(const EgressRequest *r, const char *buf) {
        const char *h = r->upstream_head, *sp;
        size_t n = r->upstream_head_len;

        CHECK(h && strlen(h) == n);
        sp = strchr(h, ' ');
        CHECK(sp && sp[1] == '/');
        CHECK(memcmp(h, buf, (size_t) (sp - h + 1)) == 0);     /* the client's method */
        CHECK(n >= 23 && memcmp(h + n - 23, "\r\nConnection: close\r\n\r\n", 23) == 0);
        CHECK(count(h, n, "\r\n\r\n") == 1);
        for (size_t i = 0; i < n; i++)
                if (h[i] == '\n')
                        CHECK(i > 0 && h[i - 1] == '\r');
        CHECK(count(h, n, "\r\nproxy-") == 0);
        CHECK(count(h, n, "\r\ntransfer-encoding:") == 0);
        CHECK(count(h, n, "\r\nhost:") == 1);
        CHECK(count(h, n, "\r\nconnection:") == 1);
        CHECK(count(h, n, "\r\ncontent-length:") <= 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *buf = (const char *) data, *reason = NULL;
        EgressRequest r = {}, again = {};
        size_t hl;
        int k;

        if (size > 2 * EGRESS_REQUEST_HEAD_MAX)
                return 0;
        k = egress_request_parse(buf, size, &r, &reason);
        if (k == -EBADMSG || k == -E2BIG) {
                CHECK(reason);
                return 0;
        }
        CHECK(k >= 0);
        if (k == 0) {
                CHECK(size < EGRESS_REQUEST_HEAD_MAX);
                return 0;
        }

        CHECK((size_t) k <= size && k <= EGRESS_REQUEST_HEAD_MAX && k >= 4);
        CHECK(memcmp(buf + k - 4, "\r\n\r\n", 4) == 0);
        hl = strlen(r.host);
        CHECK(hl >= 1 && hl <= 253);
        for (size_t i = 0; i < hl; i++)
                CHECK(!(r.host[i] >= 'A' && r.host[i] <= 'Z'));
        CHECK(dns_name_is_valid(r.host, hl) || egress_host_is_ip_literal(r.host));
        CHECK(r.port != 0);
        if (r.connect) {
                CHECK(!r.upstream_head && r.body_len == 0);
        } else
                check_upstream(&r, buf);

        /* The head alone parses the same; one byte less is not a head. */
        CHECK(egress_request_parse(buf, (size_t) k, &again, NULL) == k);
        CHECK(streq(again.host, r.host) && again.port == r.port && again.connect == r.connect &&
              again.body_len == r.body_len && again.upstream_head_len == r.upstream_head_len);
        CHECK(!r.upstream_head || memcmp(again.upstream_head, r.upstream_head, r.upstream_head_len) == 0);
        egress_request_done(&again);
        CHECK(egress_request_parse(buf, (size_t) k - 1, &again, NULL) == 0);

        egress_request_done(&r);
        return 0;
}
