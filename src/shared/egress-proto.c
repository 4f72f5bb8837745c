/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-proto.h"

#include <string.h>

#include "macro.h"

/* The one table of wire names: the broker's journal entries, the results'
 * counts and /metrics labels all read them from here. */
static const char *const verdict_table[_EGRESS_VERDICT_MAX] = {
        [EGRESS_VERDICT_ALLOWED] = "allowed",
        [EGRESS_VERDICT_POLICY] = "policy",
        [EGRESS_VERDICT_IP_LITERAL] = "ip-literal",
        [EGRESS_VERDICT_NON_PUBLIC] = "non-public",
        [EGRESS_VERDICT_SNI] = "sni-mismatch",
        [EGRESS_VERDICT_CAP] = "cap",
        [EGRESS_VERDICT_BAD_REQUEST] = "bad-request",
        [EGRESS_VERDICT_UPSTREAM] = "upstream-failed",
};

const char *egress_verdict_to_string(EgressVerdict v) {
        return v >= 0 && v < _EGRESS_VERDICT_MAX ? verdict_table[v] : NULL;
}

EgressVerdict egress_verdict_from_string(const char *s) {
        if (!s)
                return _EGRESS_VERDICT_INVALID;
        for (size_t i = 0; i < ELEMENTSOF(verdict_table); i++)
                if (streq(verdict_table[i], s))
                        return (EgressVerdict) i;
        return _EGRESS_VERDICT_INVALID;
}
