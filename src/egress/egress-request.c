/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* Placeholder until the parser lands: refuses every request, so that
 * mcp-exec-egressd links and fails closed. */
int egress_request_parse(const char *buf, size_t n, EgressRequest *ret, const char **ret_reason) {
        (void) buf;
        (void) n;
        (void) ret;
        if (ret_reason)
                *ret_reason = "not implemented";
        return -EBADMSG;
}

void egress_request_done(EgressRequest *r) {
        if (!r)
                return;
        r->upstream_head = mfree(r->upstream_head);
        r->upstream_head_len = 0;
}
