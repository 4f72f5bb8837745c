/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/egress/egress-address.[ch]: which addresses egressd may
 * connect to, and which hosts are IP literals in any spelling. */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "egress-address.h"
#include "macro.h"
#include "test-helpers.h"

/* Judges text (IPv4 or IPv6) as a sockaddr. */
static bool is_public(const char *text, const EgressConfig *cfg) {
        struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(443) };
        struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(443) };

        if (inet_pton(AF_INET, text, &in.sin_addr) == 1) {
                /* A short length is never public, whatever the address. */
                ASSERT_FALSE(egress_address_is_public((struct sockaddr *) &in, sizeof in - 1, cfg));
                return egress_address_is_public((struct sockaddr *) &in, sizeof in, cfg);
        }
        ASSERT_EQ_INT(inet_pton(AF_INET6, text, &in6.sin6_addr), 1);
        ASSERT_FALSE(egress_address_is_public((struct sockaddr *) &in6, sizeof in6 - 1, cfg));
        return egress_address_is_public((struct sockaddr *) &in6, sizeof in6, cfg);
}

TEST(test_ipv4) {
        static const char *const refused[] = {
                "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.255",
                "127.0.0.1", "127.255.0.1", "169.254.169.254", "169.254.0.1", "172.16.0.1", "172.31.255.255",
                "192.0.0.1", "192.0.0.170", "192.0.2.1", "192.168.1.1", "198.18.0.1", "198.19.255.255",
                "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
        };
        static const char *const public[] = {
                "1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
                "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0",
                "192.0.1.255", "192.0.3.0", "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0",
                "198.51.99.255", "198.51.101.0", "203.0.112.255", "203.0.114.0", "223.255.255.255", "151.101.0.223",
        };

        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                if (is_public(refused[i], NULL))
                        ASSERT_FAIL_("%s judged public", refused[i]);
        for (size_t i = 0; i < ELEMENTSOF(public); i++)
                if (!is_public(public[i], NULL))
                        ASSERT_FAIL_("%s judged non-public", public[i]);
}

TEST(test_ipv6) {
        static const char *const refused[] = {
                "::", "::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "::127.0.0.1",
                "::10.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::808:808", "64:ff9b:1::1", "64:ff9b:1:ffff::1",
                "100::1", "100::ffff:ffff:ffff:ffff", "2001:db8::1", "2001::1", "2001:1ff::1", "2001:10::1",
                "2002:7f00:1::1", "2002::", "fc00::1", "fd12:3456::1", "fe80::1", "febf::1", "fec0::1",
                "feff::1", "ff02::1", "ff0e::1",
        };
        static const char *const public[] = {
                "2606:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8", "::8.8.8.8", "64:ff9a::1",
                "64:ff9b:2::1", "100:0:0:1::1", "2001:200::1", "2001:db9::1", "2003::1", "fbff::1",
        };

        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                if (is_public(refused[i], NULL))
                        ASSERT_FAIL_("%s judged public", refused[i]);
        for (size_t i = 0; i < ELEMENTSOF(public); i++)
                if (!is_public(public[i], NULL))
                        ASSERT_FAIL_("%s judged non-public", public[i]);
}

TEST(test_testing_public) {
        EgressConfig cfg = { .n_testing_public = 1 };

        cfg.testing_public[0] = inet_addr("198.51.100.0");
        ASSERT_TRUE(is_public("198.51.100.1", &cfg));
        ASSERT_TRUE(is_public("198.51.100.255", &cfg));
        ASSERT_TRUE(is_public("::ffff:198.51.100.1", &cfg));
        /* Only that range: the other documentation ranges and the private
         * ones stay refused. */
        ASSERT_FALSE(is_public("192.0.2.1", &cfg));
        ASSERT_FALSE(is_public("203.0.113.1", &cfg));
        ASSERT_FALSE(is_public("127.0.0.1", &cfg));
        ASSERT_FALSE(is_public("10.0.0.1", &cfg));
        ASSERT_FALSE(is_public("198.51.100.1", NULL));
        ASSERT_TRUE(is_public("8.8.8.8", &cfg));
}

TEST(test_other_families) {
        struct sockaddr_un un = { .sun_family = AF_UNIX };
        struct sockaddr_storage ss = {};

        ASSERT_FALSE(egress_address_is_public((struct sockaddr *) &un, sizeof un, NULL));
        ASSERT_FALSE(egress_address_is_public((struct sockaddr *) &ss, sizeof ss, NULL));      /* AF_UNSPEC */
        ASSERT_FALSE(egress_address_is_public(NULL, 0, NULL));
        ASSERT_FALSE(egress_address_is_public((struct sockaddr *) &ss, 1, NULL));
}

TEST(test_ip_literal) {
        static const char *const literals[] = {
                "127.0.0.1", "127.0.0.1.", "127.1", "127.0.1", "0x7f.1", "0x7F.0.0.1", "0177.0.0.1", "2130706433",
                "0x7f000001", "017700000001", "1.2.3.4", "0", "10.0.0.1", "169.254.169.254", "1.2.3.08",
                "256.1.1.1", "1.2.3.4.5", "a.b.0x1", "example.123",
                "::1", "[::1]", "::", "[::]", "::ffff:127.0.0.1", "[::ffff:127.0.0.1]", "fe80::1%eth0",
                "[fe80::1%eth0]", "[fe80::1%25eth0]", "2001:db8::1", "[2001:DB8::1]", "1::",
        };
        static const char *const names[] = {
                "", "example.com", "pypi.org", "localhost", "1.2.3.example.com", "127.0.0.1.nip.io",
                "0x7f.example", "a.0x1g", "[example.com]", "[::1", "::1]", "[]", "[::1%]", "fe80::1%", "1:2",
                "1:2:3:4:5:6:7:8:9", "[127.0.0.1]", "1.2.3.4 ", " 1.2.3.4", "1.2.3.4/8", "1.2.3.4:80",
        };

        for (size_t i = 0; i < ELEMENTSOF(literals); i++)
                if (!egress_host_is_ip_literal(literals[i]))
                        ASSERT_FAIL_("'%s' not taken as an IP literal", literals[i]);
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (egress_host_is_ip_literal(names[i]))
                        ASSERT_FAIL_("'%s' taken as an IP literal", names[i]);
        ASSERT_FALSE(egress_host_is_ip_literal(NULL));
}

int main(void) {
        RUN(test_ipv4);
        RUN(test_ipv6);
        RUN(test_testing_public);
        RUN(test_other_families);
        RUN(test_ip_literal);
        return 0;
}
