/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Which addresses egressd may connect to: public unicast only. Refused:
 * 0.0.0.0/8, 10/8, 100.64/10, 127/8, 169.254/16 (169.254.169.254 too),
 * 172.16/12, 192.0.0/24, 192.0.2/24, 192.168/16, 198.18/15, 198.51.100/24,
 * 203.0.113/24, 224/4, 240/4, 255.255.255.255; ::, ::1, ::ffff:0:0/96 and
 * ::/96 (judged as the IPv4 inside), 64:ff9b::/96, 64:ff9b:1::/48, 100::/64,
 * 2001:db8::/32, 2001::/23 (Teredo, ORCHID…), 2002::/16 (6to4 of anything),
 * fc00::/7, fe80::/10, fec0::/10, ff00::/8. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "egress-policy.h"

/* sa of len bytes, AF_INET or AF_INET6; any other family is not public.
 * cfg may be NULL; its testing_public ranges count as public. */
bool egress_address_is_public(const struct sockaddr *sa, socklen_t len, const EgressConfig *cfg);

/* Is s an IP literal in any form a client could use as a host: dotted quad,
 * short or octal/hex forms inet_aton() takes ("127.1", "0x7f.1", "2130706433"),
 * an IPv6 address with or without brackets, with or without a zone? */
bool egress_host_is_ip_literal(const char *s);
