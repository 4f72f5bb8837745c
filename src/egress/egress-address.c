/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-address.h"

#include <arpa/inet.h>
#include <assert.h>
#include <netinet/in.h>
#include <string.h>

#include "dns-name.h"
#include "macro.h"

typedef struct Range4 {
        uint32_t net;   /* host byte order */
        unsigned bits;
} Range4;

/* Everything that is not public unicast IPv4 (egress-address.h). */
static const Range4 refused4[] = {
        { 0x00000000, 8 },      /* 0.0.0.0/8 "this network" */
        { 0x0a000000, 8 },      /* 10/8 */
        { 0x64400000, 10 },     /* 100.64/10 CGNAT */
        { 0x7f000000, 8 },      /* 127/8 */
        { 0xa9fe0000, 16 },     /* 169.254/16 link-local, cloud metadata */
        { 0xac100000, 12 },     /* 172.16/12 */
        { 0xc0000000, 24 },     /* 192.0.0/24 IETF protocol assignments */
        { 0xc0000200, 24 },     /* 192.0.2/24 TEST-NET-1 */
        { 0xc0a80000, 16 },     /* 192.168/16 */
        { 0xc6120000, 15 },     /* 198.18/15 benchmarking */
        { 0xc6336400, 24 },     /* 198.51.100/24 TEST-NET-2 */
        { 0xcb007100, 24 },     /* 203.0.113/24 TEST-NET-3 */
        { 0xe0000000, 4 },      /* 224/4 multicast */
        { 0xf0000000, 4 },      /* 240/4 reserved, 255.255.255.255 */
};

static bool in_range4(uint32_t a, uint32_t net, unsigned bits) {
        uint32_t mask = bits == 0 ? 0 : UINT32_MAX << (32 - bits);
        return (a & mask) == net;
}

/* a in network byte order. */
static bool ip4_is_public(uint32_t a_net, const EgressConfig *cfg) {
        uint32_t a = ntohl(a_net);

        /* Test only: the documentation /24s the configuration names. */
        if (cfg)
                for (size_t i = 0; i < MIN(cfg->n_testing_public, (size_t) EGRESS_TESTING_RANGES_MAX); i++)
                        if (in_range4(a, ntohl(cfg->testing_public[i]), 24))
                                return true;
        for (size_t i = 0; i < ELEMENTSOF(refused4); i++)
                if (in_range4(a, refused4[i].net, refused4[i].bits))
                        return false;
        return true;
}

typedef struct Range6 {
        uint8_t prefix[16];
        unsigned bits;
} Range6;

static const Range6 refused6[] = {
        { { 0x00, 0x64, 0xff, 0x9b }, 96 },             /* 64:ff9b::/96 NAT64 */
        { { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48 }, /* 64:ff9b:1::/48 local NAT64 */
        { { 0x01, 0x00 }, 64 },                         /* 100::/64 discard */
        { { 0x20, 0x01, 0x0d, 0xb8 }, 32 },             /* 2001:db8::/32 documentation */
        { { 0x20, 0x01 }, 23 },                         /* 2001::/23 Teredo, ORCHID, … */
        { { 0x20, 0x02 }, 16 },                         /* 2002::/16 6to4 of any IPv4 */
        { { 0xfc }, 7 },                                /* fc00::/7 unique local */
        { { 0xfe, 0x80 }, 10 },                         /* fe80::/10 link-local */
        { { 0xfe, 0xc0 }, 10 },                         /* fec0::/10 site-local */
        { { 0xff }, 8 },                                /* ff00::/8 multicast */
};

static bool in_range6(const uint8_t a[16], const uint8_t p[16], unsigned bits) {
        unsigned bytes = bits / 8, rest = bits % 8;

        if (memcmp(a, p, bytes) != 0)
                return false;
        if (rest == 0)
                return true;
        return ((a[bytes] ^ p[bytes]) & (uint8_t) (0xff << (8 - rest))) == 0;
}

static bool ip6_is_public(const struct in6_addr *a, const EgressConfig *cfg) {
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        static const uint8_t zero[12] = {};
        uint32_t v4;

        assert(a);

        /* ::ffff:0:0/96 (mapped) and ::/96 (compatible, and :: and ::1 with
         * it): the kernel may reach the IPv4 inside, so judge that. */
        if (memcmp(a->s6_addr, mapped, 12) == 0 || memcmp(a->s6_addr, zero, 12) == 0) {
                memcpy(&v4, a->s6_addr + 12, sizeof v4);
                return ip4_is_public(v4, cfg);
        }
        for (size_t i = 0; i < ELEMENTSOF(refused6); i++)
                if (in_range6(a->s6_addr, refused6[i].prefix, refused6[i].bits))
                        return false;
        return true;
}

bool egress_address_is_public(const struct sockaddr *sa, socklen_t len, const EgressConfig *cfg) {
        if (!sa || len < (socklen_t) sizeof(sa_family_t))
                return false;

        if (sa->sa_family == AF_INET && len >= (socklen_t) sizeof(struct sockaddr_in)) {
                struct sockaddr_in in;

                memcpy(&in, sa, sizeof in);     /* sa may be unaligned */
                return ip4_is_public(in.sin_addr.s_addr, cfg);
        }
        if (sa->sa_family == AF_INET6 && len >= (socklen_t) sizeof(struct sockaddr_in6)) {
                struct sockaddr_in6 in6;

                memcpy(&in6, sa, sizeof in6);
                return ip6_is_public(&in6.sin6_addr, cfg);
        }
        return false;
}

/* An IPv6 address, optionally with "%zone" (or "%25zone" as URLs write it). */
static bool ip6_literal(const char *s, size_t n) {
        char buf[INET6_ADDRSTRLEN + 1];
        struct in6_addr a;
        const char *pct;

        assert(s);

        pct = memchr(s, '%', n);
        if (pct) {
                if (pct + 1 == s + n)
                        return false;
                n = (size_t) (pct - s);
        }
        if (n == 0 || n >= sizeof buf)
                return false;
        memcpy(buf, s, n);
        buf[n] = 0;
        return inet_pton(AF_INET6, buf, &a) == 1;
}

bool egress_host_is_ip_literal(const char *s) {
        char buf[EGRESS_HOST_MAX + 2];
        struct in_addr a4;
        size_t n, last;

        if (isempty(s))
                return false;
        n = strlen(s);
        if (s[0] == '[')
                return n > 2 && s[n - 1] == ']' && ip6_literal(s + 1, n - 2);
        if (memchr(s, ':', n))
                return ip6_literal(s, n);

        /* "127.0.0.1." is the same address to a resolver. */
        if (n > 1 && s[n - 1] == '.')
                n--;
        if (n >= sizeof buf)
                return false;
        memcpy(buf, s, n);
        buf[n] = 0;
        /* Only what a host may hold (glibc's inet_aton() ignores whatever
         * follows a blank). */
        for (size_t i = 0; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.", buf[i]))
                        return false;
        /* Every form inet_aton() takes: "127.1", "0x7f.1", "2130706433", octal. */
        if (inet_aton(buf, &a4) != 0)
                return true;
        /* What inet_aton() refuses but URL parsers still read as IPv4 (a
         * numeric last label, WHATWG): "1.2.3.08", "256.1.1.1". Such a
         * host is never a name either (dns_name_is_valid()). */
        last = n;
        while (last > 0 && buf[last - 1] != '.')
                last--;
        return n > last && dns_label_is_numeric(buf + last, n - last);
}
