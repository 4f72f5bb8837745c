/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "dns-name.h"

#include <assert.h>

#include "egress-policy.h"

static bool is_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_hex(char c) {
        return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || (c >= '0' && c <= '9');
}

/* As inet_aton() and WHATWG URL parsers read a label: decimal, or 0x hex. */
bool dns_label_is_numeric(const char *s, size_t n) {
        size_t i = 0;

        if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
                for (i = 2; i < n; i++)
                        if (!is_hex(s[i]))
                                return false;
                return true;
        }
        for (; i < n; i++)
                if (s[i] < '0' || s[i] > '9')
                        return false;
        return true;
}

bool dns_name_is_valid(const char *s, size_t n) {
        size_t start = 0;

        assert(s || n == 0);

        if (n == 0 || n > EGRESS_HOST_MAX)
                return false;
        for (size_t i = 0; i <= n; i++) {
                size_t l;

                if (i < n && s[i] != '.') {
                        if (!is_alnum(s[i]) && s[i] != '-')
                                return false;
                        continue;
                }
                /* A label ends at s[i]. */
                l = i - start;
                if (l == 0 || l > 63 || s[start] == '-' || s[i - 1] == '-')
                        return false;
                if (i == n && dns_label_is_numeric(s + start, l))
                        return false;
                start = i + 1;
        }
        return true;
}
