/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/image-info.[ch] and src/shared/mime-type.[ch]:
 * real images as Pillow writes them, and the headers of bombs and fakes. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image-info.h"
#include "macro.h"
#include "mime-type.h"
#include "test-helpers.h"
#include "test-images.h"

static void probes(const uint8_t *data, size_t n, ImageFormat format, uint32_t w, uint32_t h) {
        ImageInfo info = {};

        ASSERT_EQ_INT(image_probe(data, n, &info), 0);
        ASSERT_EQ_INT(info.format, format);
        ASSERT_EQ_INT(info.width, w);
        ASSERT_EQ_INT(info.height, h);
}

static void refused(const uint8_t *data, size_t n) {
        ImageInfo info = { .width = 7 };

        ASSERT_EQ_INT(image_probe(data, n, &info), -EBADMSG);
        ASSERT_EQ_INT(info.width, 7);   /* untouched */
}

/* A copy of data with bytes at off replaced. */
static uint8_t *patched(const uint8_t *data, size_t n, size_t off, const void *bytes, size_t len) {
        uint8_t *p = malloc(n);

        ASSERT_TRUE(p && off + len <= n);
        memcpy(p, data, n);
        memcpy(p + off, bytes, len);
        return p;
}

TEST(test_real_images) {
        probes(png_3x2, sizeof png_3x2, IMAGE_FORMAT_PNG, 3, 2);
        probes(jpeg_3x2, sizeof jpeg_3x2, IMAGE_FORMAT_JPEG, 3, 2);
        probes(gif_3x2, sizeof gif_3x2, IMAGE_FORMAT_GIF, 3, 2);
        probes(webp_lossy_3x2, sizeof webp_lossy_3x2, IMAGE_FORMAT_WEBP, 3, 2);
        probes(webp_lossless_3x2, sizeof webp_lossless_3x2, IMAGE_FORMAT_WEBP, 3, 2);
        probes(webp_anim_3x2, sizeof webp_anim_3x2, IMAGE_FORMAT_WEBP, 3, 2);

        ASSERT_STREQ(image_format_to_mime_type(IMAGE_FORMAT_WEBP), "image/webp");
        ASSERT_TRUE(!image_format_to_mime_type(_IMAGE_FORMAT_MAX));
        ASSERT_TRUE(!image_format_to_mime_type(_IMAGE_FORMAT_INVALID));
        ASSERT_EQ_INT(image_format_from_mime_type("image/jpeg"), IMAGE_FORMAT_JPEG);
        ASSERT_EQ_INT(image_format_from_mime_type("image/svg+xml"), _IMAGE_FORMAT_INVALID);
        ASSERT_EQ_INT(image_format_from_mime_type(NULL), _IMAGE_FORMAT_INVALID);
}

TEST(test_truncated_and_fake) {
        static const char text[] = "col1,col2\n1,2\n";
        static const uint8_t zero[64] = {};

        /* Every strict prefix of a real image is refused: cut-off files
         * carry no trustworthy header. */
        for (size_t n = 0; n < sizeof png_3x2; n++)
                refused(png_3x2, n);
        for (size_t n = 0; n < sizeof jpeg_3x2; n++)
                refused(jpeg_3x2, n);
        for (size_t n = 0; n < sizeof gif_3x2; n++)
                refused(gif_3x2, n);
        for (size_t n = 0; n < sizeof webp_lossy_3x2; n++)
                refused(webp_lossy_3x2, n);

        refused((const uint8_t *) text, sizeof text - 1);
        refused(zero, sizeof zero);
        refused(NULL, 0);
        /* The PNG signature on something else. */
        {
                _cleanup_free_ uint8_t *p = patched(jpeg_3x2, sizeof jpeg_3x2, 0, png_3x2, 8);
                refused(p, sizeof jpeg_3x2);
        }
        /* A WebP whose RIFF size disagrees with the file. */
        {
                static const uint8_t big[4] = { 0xff, 0, 0, 0 };
                _cleanup_free_ uint8_t *p = patched(webp_lossy_3x2, sizeof webp_lossy_3x2, 4, big, 4);
                refused(p, sizeof webp_lossy_3x2);
        }
        /* Zero pixels. */
        {
                static const uint8_t zw[4] = {};
                _cleanup_free_ uint8_t *p = patched(png_3x2, sizeof png_3x2, 16, zw, 4);
                refused(p, sizeof png_3x2);
        }
}

/* Decompression bombs: small files whose headers claim huge pictures are
 * read (so the caller can name the size) and fail image_size_ok(). */
TEST(test_bombs) {
        ImageInfo info;

        {
                /* A PNG claiming 100000x100000 pixels. */
                static const uint8_t dims[8] = { 0, 0x01, 0x86, 0xa0, 0, 0x01, 0x86, 0xa0 };
                _cleanup_free_ uint8_t *p = patched(png_3x2, sizeof png_3x2, 16, dims, sizeof dims);
                ASSERT_EQ_INT(image_probe(p, sizeof png_3x2, &info), 0);
                ASSERT_EQ_INT(info.width, 100000);
                ASSERT_FALSE(image_size_ok(info.width, info.height));
        }
        {
                /* Past what PNG allows at all. */
                static const uint8_t dims[4] = { 0x80, 0, 0, 0 };
                _cleanup_free_ uint8_t *p = patched(png_3x2, sizeof png_3x2, 16, dims, sizeof dims);
                refused(p, sizeof png_3x2);
        }
        {
                /* A JPEG frame header claiming 65535x65535. */
                static const uint8_t dims[4] = { 0xff, 0xff, 0xff, 0xff };
                const uint8_t *sof = NULL;
                for (size_t i = 0; i + 1 < sizeof jpeg_3x2 && !sof; i++)
                        if (jpeg_3x2[i] == 0xff && jpeg_3x2[i + 1] == 0xc0)
                                sof = jpeg_3x2 + i;
                ASSERT_TRUE(sof);
                _cleanup_free_ uint8_t *p = patched(jpeg_3x2, sizeof jpeg_3x2, (size_t) (sof - jpeg_3x2) + 5, dims, 4);
                ASSERT_EQ_INT(image_probe(p, sizeof jpeg_3x2, &info), 0);
                ASSERT_EQ_INT(info.width, 65535);
                ASSERT_FALSE(image_size_ok(info.width, info.height));
        }
        {
                /* A GIF's logical screen of 65535x65535. */
                static const uint8_t dims[4] = { 0xff, 0xff, 0xff, 0xff };
                _cleanup_free_ uint8_t *p = patched(gif_3x2, sizeof gif_3x2, 6, dims, 4);
                ASSERT_EQ_INT(image_probe(p, sizeof gif_3x2, &info), 0);
                ASSERT_FALSE(image_size_ok(info.width, info.height));
        }
        {
                /* A GIF frame larger than its screen counts. */
                static const uint8_t dims[4] = { 0x28, 0x23, 0x0a, 0x00 };    /* 9000x10 */
                const uint8_t *d = memchr(gif_3x2 + 13, 0x2c, sizeof gif_3x2 - 13);
                ASSERT_TRUE(d);
                _cleanup_free_ uint8_t *p = patched(gif_3x2, sizeof gif_3x2, (size_t) (d - gif_3x2) + 5, dims, 4);
                ASSERT_EQ_INT(image_probe(p, sizeof gif_3x2, &info), 0);
                ASSERT_EQ_INT(info.width, 9000);
                ASSERT_FALSE(image_size_ok(info.width, info.height));
        }
        {
                /* Frames of 16384x16384: more pixels than even an animation may have. */
                static const uint8_t dims[4] = { 0x00, 0x40, 0x00, 0x40 };
                const uint8_t *d = memchr(gif_3x2 + 13, 0x2c, sizeof gif_3x2 - 13);
                _cleanup_free_ uint8_t *p = patched(gif_3x2, sizeof gif_3x2, (size_t) (d - gif_3x2) + 5, dims, 4);
                refused(p, sizeof gif_3x2);
        }
        {
                /* A WebP canvas of 16384x16384 (VP8X stores width-1, height-1). */
                static const uint8_t dims[6] = { 0xff, 0x3f, 0, 0xff, 0x3f, 0 };
                _cleanup_free_ uint8_t *p = patched(webp_anim_3x2, sizeof webp_anim_3x2, 24, dims, 6);
                ASSERT_EQ_INT(image_probe(p, sizeof webp_anim_3x2, &info), 0);
                ASSERT_EQ_INT(info.width, 16384);
                ASSERT_FALSE(image_size_ok(info.width, info.height));
        }

        ASSERT_TRUE(image_size_ok(1, 1));
        ASSERT_TRUE(image_size_ok(IMAGE_MAX_SIDE, IMAGE_MAX_PIXELS / IMAGE_MAX_SIDE));
        ASSERT_FALSE(image_size_ok(IMAGE_MAX_SIDE, IMAGE_MAX_PIXELS / IMAGE_MAX_SIDE + 1));
        ASSERT_FALSE(image_size_ok(IMAGE_MAX_SIDE + 1, 1));
        ASSERT_FALSE(image_size_ok(1, IMAGE_MAX_SIDE + 1));
        ASSERT_FALSE(image_size_ok(0, 1));
        ASSERT_FALSE(image_size_ok(UINT32_MAX, UINT32_MAX));
}

static void mime(const char *path, const char *want) {
        const char *got = mime_type_from_path(path, strlen(path));

        if (!want)
                ASSERT_TRUE(!got);
        else
                ASSERT_STREQ(got, want);
}

TEST(test_mime_type) {
        mime("/tmp/outputs/plot.png", "image/png");
        mime("/tmp/outputs/PLOT.PNG", "image/png");
        mime("/tmp/outputs/a.JPG", "image/jpeg");
        mime("/tmp/outputs/a.jpeg", "image/jpeg");
        mime("/tmp/outputs/a.gif", "image/gif");
        mime("/tmp/outputs/a.webp", "image/webp");
        mime("/tmp/outputs/a.svg", "image/svg+xml");
        mime("/tmp/outputs/data.csv", "text/csv");
        mime("/tmp/outputs/data.tar.gz", "application/gzip");
        mime("/tmp/outputs/x.json", "application/json");
        mime("/tmp/outputs/README", NULL);
        mime("/tmp/outputs/.bashrc", NULL);
        mime("/tmp/outputs/a.", NULL);
        mime("/tmp/outputs/d.png/file", NULL);     /* the directory's extension is not the file's */
        mime("/tmp/outputs/a.pngx", NULL);
        mime("", NULL);
}

int main(void) {
        RUN(test_real_images);
        RUN(test_truncated_and_fake);
        RUN(test_bombs);
        RUN(test_mime_type);
        return 0;
}
