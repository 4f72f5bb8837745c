/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The request head a run's client sends the proxy: HTTP/1.1 (or 1.0)
 * "CONNECT host:port", or "GET|POST|HEAD|PUT|DELETE|OPTIONS|PATCH
 * http://host[:port]/path" (absolute form). Nothing else is served: not
 * origin-form, not https:// in absolute form, not userinfo, not chunked
 * request bodies. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EGRESS_REQUEST_HEAD_MAX 16384   /* request line and headers */

typedef struct EgressRequest {
        bool connect;                   /* CONNECT; else absolute form */
        char host[254];                 /* lower case, no trailing dot, no brackets */
        uint16_t port;                  /* given, or 80 for http:// */
        /* Absolute form only: the head to send upstream, rewritten: request
         * line in origin form, Proxy-* and hop-by-hop headers dropped, Host
         * as the URL's, "Connection: close" added. Owned. */
        char *upstream_head;
        size_t upstream_head_len;
        uint64_t body_len;              /* Content-Length, 0 if none */
} EgressRequest;

/* buf holds n bytes the client sent so far. Returns 0 when the head is not
 * complete yet (and n < EGRESS_REQUEST_HEAD_MAX), > 0 = the head's length in
 * bytes with *ret filled, or -EBADMSG (malformed, unsupported, a Host header
 * that differs from the URL's host, Transfer-Encoding in a request),
 * -E2BIG (no end of head within EGRESS_REQUEST_HEAD_MAX). ret_reason, if
 * set, gets a short static English reason on failure. */
int egress_request_parse(const char *buf, size_t n, EgressRequest *ret, const char **ret_reason);
void egress_request_done(EgressRequest *r);
