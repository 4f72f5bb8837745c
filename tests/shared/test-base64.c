/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/basic/base64.[ch] and src/shared/file-uri.[ch]. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "file-uri.h"
#include "macro.h"
#include "test-helpers.h"

static void round_trip(const char *plain, const char *encoded) {
        _cleanup_free_ char *e = NULL;
        _cleanup_free_ uint8_t *d = NULL;
        size_t n, len = strlen(plain);

        ASSERT_EQ_INT(base64_encode(plain, len, &e, &n), 0);
        ASSERT_STREQ(e, encoded);
        ASSERT_EQ_U64(n, strlen(encoded));
        ASSERT_EQ_U64(base64_encoded_len(len), n);
        ASSERT_EQ_INT(base64_decode(encoded, strlen(encoded), UINT64_MAX, &d, &n, NULL), 0);
        ASSERT_EQ_U64(n, len);
        ASSERT_MEMEQ(d, plain, len);
}

static void decodes(const char *in, const char *want) {
        _cleanup_free_ uint8_t *d = NULL;
        size_t n;

        ASSERT_EQ_INT(base64_decode(in, strlen(in), UINT64_MAX, &d, &n, NULL), 0);
        ASSERT_EQ_U64(n, strlen(want));
        ASSERT_MEMEQ(d, want, n);
}

static void refused(const char *in, size_t want_offset) {
        uint8_t *d = NULL;
        size_t n = 77, off = 99;

        ASSERT_EQ_INT(base64_decode(in, strlen(in), UINT64_MAX, &d, &n, &off), -EINVAL);
        ASSERT_TRUE(!d);
        ASSERT_EQ_U64(n, 77);
        ASSERT_EQ_U64(off, want_offset);
}

TEST(test_base64) {
        /* RFC 4648, section 10. */
        round_trip("", "");
        round_trip("f", "Zg==");
        round_trip("fo", "Zm8=");
        round_trip("foo", "Zm9v");
        round_trip("foob", "Zm9vYg==");
        round_trip("fooba", "Zm9vYmE=");
        round_trip("foobar", "Zm9vYmFy");

        /* Every byte value. */
        {
                uint8_t all[256];
                _cleanup_free_ char *e = NULL;
                _cleanup_free_ uint8_t *d = NULL;
                size_t n;

                for (size_t i = 0; i < sizeof all; i++)
                        all[i] = (uint8_t) i;
                ASSERT_EQ_INT(base64_encode(all, sizeof all, &e, &n), 0);
                ASSERT_EQ_INT(base64_decode(e, n, sizeof all, &d, &n, NULL), 0);
                ASSERT_EQ_U64(n, sizeof all);
                ASSERT_MEMEQ(d, all, sizeof all);
        }

        /* Without padding, and wrapped lines. */
        decodes("Zg", "f");
        decodes("Zm8", "fo");
        decodes("Zm9v\nYmFy\r\n", "foobar");

        refused("Zm9v YmFy", 4);        /* a space */
        refused("Zm9v-mFy", 4);         /* the URL-safe alphabet */
        refused("Zm9v\tYmFy", 4);
        refused("Z", 1);                /* one digit: no whole byte */
        refused("Zm9vY", 5);
        refused("Zg=", 3);              /* padding that does not complete the group */
        refused("Zm8==", 5);
        refused("Zg===", 4);
        refused("Zg==Zg==", 4);         /* data after padding */
        refused("=", 1);
        refused("\xc3\xa9", 0);

        /* The size is checked before anything is decoded or allocated. */
        {
                uint8_t *d = NULL;
                size_t n;
                ASSERT_EQ_INT(base64_decode("Zm9vYmFy", 8, 5, &d, &n, NULL), -EFBIG);
                ASSERT_TRUE(!d);
                ASSERT_EQ_INT(base64_decode("Zm9vYmFy", 8, 6, &d, &n, NULL), 0);
                free(d);
                ASSERT_EQ_INT(base64_decode("", 0, 0, &d, &n, NULL), 0);
                ASSERT_TRUE(d);
                ASSERT_EQ_U64(n, 0);
                free(d);
        }
        ASSERT_EQ_U64(base64_encoded_len(SIZE_MAX), SIZE_MAX);
}

static void uri(const char *path, size_t len, const char *want) {
        _cleanup_free_ char *u = NULL, *back = NULL;
        size_t n;

        ASSERT_EQ_INT(file_uri_from_path(path, len, &u), 0);
        ASSERT_STREQ(u, want);
        ASSERT_EQ_INT(file_uri_to_path(u, &back, &n), 0);
        ASSERT_EQ_U64(n, len);
        ASSERT_MEMEQ(back, path, len);
}

TEST(test_file_uri) {
        char *u = NULL, *p = NULL;

        uri("/tmp/outputs/a.csv", 18, "file:///tmp/outputs/a.csv");
        uri("/tmp/outputs/sub dir/r\xc3\xa9sum\xc3\xa9.txt", 33,
            "file:///tmp/outputs/sub%20dir/r%C3%A9sum%C3%A9.txt");
        /* Newlines, escapes, invalid UTF-8, and what URIs reserve. */
        uri("/tmp/outputs/a\nb\x1b[31m\xff%?#.txt", 29, "file:///tmp/outputs/a%0Ab%1B%5B31m%FF%25%3F%23.txt");

        ASSERT_EQ_INT(file_uri_from_path("tmp/x", 5, &u), -EINVAL);
        ASSERT_EQ_INT(file_uri_from_path("/tmp/a\0b", 8, &u), -EINVAL);
        ASSERT_EQ_INT(file_uri_from_path("", 0, &u), -EINVAL);
        ASSERT_TRUE(!u);

        ASSERT_EQ_INT(file_uri_to_path("file://localhost/x%41", &p, NULL), 0);
        ASSERT_STREQ(p, "/xA");
        free(p);
        p = NULL;
        ASSERT_EQ_INT(file_uri_to_path("http://x/y", &p, NULL), -EINVAL);
        ASSERT_EQ_INT(file_uri_to_path("file://evil/etc/shadow", &p, NULL), -EINVAL);
        ASSERT_EQ_INT(file_uri_to_path("file:///a%00b", &p, NULL), -EINVAL);
        ASSERT_EQ_INT(file_uri_to_path("file:///a%4", &p, NULL), -EINVAL);
        ASSERT_EQ_INT(file_uri_to_path("file:///a%", &p, NULL), -EINVAL);
        ASSERT_EQ_INT(file_uri_to_path("file:///a%zz", &p, NULL), -EINVAL);
        ASSERT_EQ_INT(file_uri_to_path("file:///a?b", &p, NULL), -EINVAL);
        ASSERT_TRUE(!p);
}

int main(void) {
        RUN(test_base64);
        RUN(test_file_uri);
        return 0;
}
