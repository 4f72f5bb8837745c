/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/egress/egress-tls.[ch]: the server name of a TLS
 * ClientHello, from real hellos (tls-hellos.h) and from hellos built here
 * with one thing wrong each. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress-tls.h"
#include "macro.h"
#include "test-helpers.h"
#include "tls-hellos.h"

#define UNTOUCHED "untouched"

static int sni(const uint8_t *buf, size_t n, char name[static 254]) {
        strcpy(name, UNTOUCHED);
        return egress_tls_client_hello_sni(buf, n, name);
}

TEST(test_real_hellos) {
        char name[254];

        ASSERT_EQ_INT(sni(hello_tls13, sizeof hello_tls13, name), (int) sizeof hello_tls13);
        ASSERT_STREQ(name, "files.pythonhosted.org");
        ASSERT_EQ_INT(sni(hello_tls12, sizeof hello_tls12, name), (int) sizeof hello_tls12);
        ASSERT_STREQ(name, "pypi.org");
        ASSERT_EQ_INT(sni(hello_no_sni, sizeof hello_no_sni, name), -ENOENT);
        ASSERT_STREQ(name, UNTOUCHED);

        /* Whatever follows the record is not read. */
        {
                uint8_t more[sizeof hello_tls12 + 16];

                memcpy(more, hello_tls12, sizeof hello_tls12);
                memset(more + sizeof hello_tls12, 0xff, 16);
                ASSERT_EQ_INT(sni(more, sizeof more, name), (int) sizeof hello_tls12);
                ASSERT_STREQ(name, "pypi.org");
        }
}

TEST(test_prefixes) {
        char name[254];

        /* Every prefix asks for more, and fills nothing. */
        for (size_t i = 0; i < sizeof hello_tls13; i++) {
                ASSERT_EQ_INT(sni(hello_tls13, i, name), 0);
                ASSERT_STREQ(name, UNTOUCHED);
        }
        ASSERT_EQ_INT(sni(NULL, 0, name), 0);
}

TEST(test_record_header) {
        uint8_t b[sizeof hello_tls13];
        char name[254];

        /* Not a handshake record: refused from its first byte on. */
        memcpy(b, hello_tls13, sizeof b);
        b[0] = 23;
        ASSERT_EQ_INT(sni(b, 1, name), -EBADMSG);
        ASSERT_EQ_INT(sni(b, sizeof b, name), -EBADMSG);
        b[0] = 'G';     /* "GET / HTTP/1.1" into a CONNECT tunnel */
        ASSERT_EQ_INT(sni(b, 1, name), -EBADMSG);

        static const uint8_t versions[][2] = { { 3, 0 }, { 3, 5 }, { 2, 1 }, { 0x7f, 1 } };
        for (size_t i = 0; i < ELEMENTSOF(versions); i++) {
                memcpy(b, hello_tls13, sizeof b);
                b[1] = versions[i][0];
                b[2] = versions[i][1];
                ASSERT_EQ_INT(sni(b, 3, name), -EBADMSG);
                ASSERT_EQ_INT(sni(b, sizeof b, name), -EBADMSG);
        }
        /* 0x0301..0x0304 in the record are all fine. */
        for (uint8_t v = 1; v <= 4; v++) {
                memcpy(b, hello_tls13, sizeof b);
                b[2] = v;
                ASSERT_EQ_INT(sni(b, sizeof b, name), (int) sizeof b);
        }

        /* Not a ClientHello: refused once its type is there. */
        memcpy(b, hello_tls13, sizeof b);
        b[5] = 2;
        ASSERT_EQ_INT(sni(b, 6, name), -EBADMSG);
        ASSERT_EQ_INT(sni(b, sizeof b, name), -EBADMSG);

        /* A record longer than TLS allows; one too short for a handshake header. */
        memcpy(b, hello_tls13, sizeof b);
        b[3] = 0x40;
        b[4] = 0x01;
        ASSERT_EQ_INT(sni(b, 5, name), -EBADMSG);
        b[3] = 0;
        b[4] = 3;
        ASSERT_EQ_INT(sni(b, 8, name), -EBADMSG);
        ASSERT_STREQ(name, UNTOUCHED);
}

TEST(test_lengths) {
        const size_t full = sizeof hello_tls13 - 5;
        uint8_t b[sizeof hello_tls13];
        char name[254];

        /* The hello cut short by the record (as if continued in the next
         * record): every record length below the full one is refused. */
        for (size_t k = 4; k < full; k++) {
                memcpy(b, hello_tls13, sizeof b);
                b[3] = (uint8_t) (k >> 8);
                b[4] = (uint8_t) k;
                ASSERT_EQ_INT(sni(b, 5 + k, name), -EBADMSG);
        }
        /* A handshake length that is not the record's. */
        memcpy(b, hello_tls13, sizeof b);
        b[8]++;
        ASSERT_EQ_INT(sni(b, sizeof b, name), -EBADMSG);
        b[8] -= 2;
        ASSERT_EQ_INT(sni(b, sizeof b, name), -EBADMSG);
        ASSERT_STREQ(name, UNTOUCHED);
}

/* Every one-byte change of a real hello: never more than the record, a name
 * only when valid. ASan/UBSan watch the reads. */
TEST(test_mutations) {
        uint8_t b[sizeof hello_tls13];
        char name[254];
        size_t found = 0;

        for (size_t i = 0; i < sizeof b; i++)
                for (unsigned bit = 0; bit < 8; bit++) {
                        int r;

                        memcpy(b, hello_tls13, sizeof b);
                        b[i] ^= (uint8_t) (1u << bit);
                        r = sni(b, sizeof b, name);
                        ASSERT_TRUE(r == (int) sizeof b || r == 0 || r == -ENOENT || r == -EBADMSG || r == -ECHRNG);
                        if (r > 0) {
                                found++;
                                ASSERT_TRUE(strlen(name) >= 1 && strlen(name) <= 253);
                                for (const char *c = name; *c; c++)
                                        ASSERT_TRUE((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '.');
                        } else
                                ASSERT_STREQ(name, UNTOUCHED);
                }
        /* Flips in the random, the ciphers and many extensions keep it valid. */
        ASSERT_TRUE(found > 0);
}

/* A minimal ClientHello around exts[0..n) (NULL: no extensions block). */
static size_t build(uint8_t *out, const uint8_t *exts, size_t n) {
        size_t at = 0, hs_at, len;

        out[at++] = 22;
        out[at++] = 3;
        out[at++] = 1;
        at += 2;                        /* record length */
        out[at++] = 1;
        hs_at = at;
        at += 3;                        /* handshake length */
        out[at++] = 3;
        out[at++] = 3;
        memset(out + at, 0xaa, 32);
        at += 32;
        out[at++] = 0;                  /* session id */
        out[at++] = 0;
        out[at++] = 2;
        out[at++] = 0x13;
        out[at++] = 0x01;
        out[at++] = 1;                  /* compression: null */
        out[at++] = 0;
        if (exts) {
                out[at++] = (uint8_t) (n >> 8);
                out[at++] = (uint8_t) n;
                memcpy(out + at, exts, n);
                at += n;
        }
        len = at - 5;
        out[3] = (uint8_t) (len >> 8);
        out[4] = (uint8_t) len;
        len = at - hs_at - 3;
        out[hs_at] = 0;
        out[hs_at + 1] = (uint8_t) (len >> 8);
        out[hs_at + 2] = (uint8_t) len;
        return at;
}

/* A server_name extension with the given entries (type, name) at out. */
static size_t sni_ext(uint8_t *out, size_t n_names, const uint8_t *types, const char *const *names) {
        size_t at = 6;

        for (size_t i = 0; i < n_names; i++) {
                size_t l = strlen(names[i]);

                out[at++] = types[i];
                out[at++] = (uint8_t) (l >> 8);
                out[at++] = (uint8_t) l;
                memcpy(out + at, names[i], l);
                at += l;
        }
        out[0] = 0;
        out[1] = 0;
        out[2] = (uint8_t) ((at - 4) >> 8);
        out[3] = (uint8_t) (at - 4);
        out[4] = (uint8_t) ((at - 6) >> 8);
        out[5] = (uint8_t) (at - 6);
        return at;
}

static int built_one(const char *host, char name[static 254]) {
        static const uint8_t t0[] = { 0 };
        uint8_t exts[1024], hello[2048];
        size_t n;

        n = sni_ext(exts, 1, t0, &host);
        n = build(hello, exts, n);
        return sni(hello, n, name);
}

TEST(test_built) {
        static const uint8_t t00[] = { 0, 0 }, t1[] = { 1 }, t0[] = { 0 };
        uint8_t exts[1024], hello[2048];
        char name[254], long_name[300];
        size_t n, e;

        ASSERT_TRUE(built_one("Example.COM", name) > 0);
        ASSERT_STREQ(name, "example.com");
        ASSERT_TRUE(built_one("localhost", name) > 0);

        /* Names that are not DNS host names. */
        static const char *const bad[] = {
                "", "example.com.", ".example.com", "a..b", "ex_ample.com", "exa mple.com", "-a.com",
                "127.0.0.1", "127.1", "::1", "[::1]", "a.b.0x7f", "h\xc3\xa9.com", "a%2eb",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (built_one(bad[i], name) != -EBADMSG)
                        ASSERT_FAIL_("SNI '%s' not refused", bad[i]);
        ASSERT_STREQ(name, UNTOUCHED);

        /* 253 bytes is a name, 254 is not. */
        memset(long_name, 'a', sizeof long_name);
        for (size_t i = 63; i < sizeof long_name; i += 64)
                long_name[i] = '.';
        long_name[253] = 0;
        ASSERT_EQ_INT(built_one(long_name, name) > 0, 1);
        ASSERT_EQ_INT(strlen(name), 253);
        long_name[253] = 'a';
        long_name[254] = 0;
        ASSERT_EQ_INT(built_one(long_name, name), -EBADMSG);

        /* A NUL inside the name. */
        {
                static const char *const one[] = { "exa\x01mple.com" };

                n = sni_ext(exts, 1, t0, one);
                exts[12] = 0;   /* the \x01 */
                n = build(hello, exts, n);
                ASSERT_EQ_INT(sni(hello, n, name), -EBADMSG);
        }

        /* Two host names in one extension; another name type. */
        {
                static const char *const two[] = { "a.example", "b.example" };
                static const char *const one[] = { "a.example" };

                n = build(hello, exts, sni_ext(exts, 2, t00, two));
                ASSERT_EQ_INT(sni(hello, n, name), -EBADMSG);
                n = build(hello, exts, sni_ext(exts, 1, t1, one));
                ASSERT_EQ_INT(sni(hello, n, name), -EBADMSG);

                /* Two server_name extensions. */
                e = sni_ext(exts, 1, t0, one);
                e += sni_ext(exts + e, 1, t0, one);
                n = build(hello, exts, e);
                ASSERT_EQ_INT(sni(hello, n, name), -EBADMSG);

                /* List length inside the extension off by one either way. */
                e = sni_ext(exts, 1, t0, one);
                exts[5]++;
                ASSERT_EQ_INT(sni(hello, build(hello, exts, e), name), -EBADMSG);
                exts[5] -= 2;
                ASSERT_EQ_INT(sni(hello, build(hello, exts, e), name), -EBADMSG);

                /* An empty server_name extension (a server's, not a client's). */
                static const uint8_t empty[] = { 0, 0, 0, 0 };
                ASSERT_EQ_INT(sni(hello, build(hello, empty, sizeof empty), name), -EBADMSG);

                /* Encrypted Client Hello: its outer name is not the real one. */
                e = sni_ext(exts, 1, t0, one);
                static const uint8_t ech[] = { 0xfe, 0x0d, 0x00, 0x02, 0x00, 0x00 };
                memcpy(exts + e, ech, sizeof ech);
                ASSERT_EQ_INT(sni(hello, build(hello, exts, e + sizeof ech), name), -ECHRNG);
                memcpy(exts, ech, sizeof ech);
                e = sizeof ech + sni_ext(exts + sizeof ech, 1, t0, one);
                ASSERT_EQ_INT(sni(hello, build(hello, exts, e), name), -ECHRNG);
                ASSERT_EQ_INT(sni(hello, build(hello, ech, sizeof ech), name), -ECHRNG);

                /* Other extensions around it are skipped. */
                static const uint8_t grease[] = { 0x0a, 0x0a, 0x00, 0x01, 0x00 };
                memcpy(exts, grease, sizeof grease);
                e = sizeof grease + sni_ext(exts + sizeof grease, 1, t0, one);
                memcpy(exts + e, grease, sizeof grease);
                e += sizeof grease;
                ASSERT_TRUE(sni(hello, build(hello, exts, e), name) > 0);
                ASSERT_STREQ(name, "a.example");
                /* An extension longer than the block. */
                exts[3] = 0xff;
                ASSERT_EQ_INT(sni(hello, build(hello, exts, e), name), -EBADMSG);
        }

        /* No extensions block at all, and an empty one: no name. */
        ASSERT_EQ_INT(sni(hello, build(hello, NULL, 0), name), -ENOENT);
        ASSERT_EQ_INT(sni(hello, build(hello, exts, 0), name), -ENOENT);
        ASSERT_STREQ(name, UNTOUCHED);
}

int main(void) {
        RUN(test_real_hellos);
        RUN(test_prefixes);
        RUN(test_record_header);
        RUN(test_lengths);
        RUN(test_mutations);
        RUN(test_built);
        return 0;
}
