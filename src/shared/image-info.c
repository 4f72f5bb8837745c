/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "image-info.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "macro.h"

static const char *const mime_types[_IMAGE_FORMAT_MAX] = {
        [IMAGE_FORMAT_PNG] = "image/png",
        [IMAGE_FORMAT_JPEG] = "image/jpeg",
        [IMAGE_FORMAT_GIF] = "image/gif",
        [IMAGE_FORMAT_WEBP] = "image/webp",
};

const char *image_format_to_mime_type(ImageFormat f) {
        return f >= 0 && f < _IMAGE_FORMAT_MAX ? mime_types[f] : NULL;
}

ImageFormat image_format_from_mime_type(const char *mime_type) {
        if (!mime_type)
                return _IMAGE_FORMAT_INVALID;
        for (size_t i = 0; i < _IMAGE_FORMAT_MAX; i++)
                if (streq(mime_types[i], mime_type))
                        return (ImageFormat) i;
        return _IMAGE_FORMAT_INVALID;
}

bool image_size_ok(uint32_t width, uint32_t height) {
        return width > 0 && height > 0 && width <= IMAGE_MAX_SIDE && height <= IMAGE_MAX_SIDE &&
               (uint64_t) width * height <= IMAGE_MAX_PIXELS;
}

static uint32_t be16(const uint8_t *p) {
        return (uint32_t) p[0] << 8 | p[1];
}

static uint32_t be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static uint32_t le16(const uint8_t *p) {
        return (uint32_t) p[1] << 8 | p[0];
}

static uint32_t le24(const uint8_t *p) {
        return (uint32_t) p[2] << 16 | (uint32_t) p[1] << 8 | p[0];
}

static uint32_t le32(const uint8_t *p) {
        return (uint32_t) p[3] << 24 | (uint32_t) p[2] << 16 | (uint32_t) p[1] << 8 | p[0];
}

/* The signature, then IHDR first (13 bytes of data and a CRC), then IEND
 * last: a cut-off file is refused. */
static int probe_png(const uint8_t *p, size_t n, ImageInfo *ret) {
        static const uint8_t iend[] = { 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82 };

        if (n < 8 + 25 + sizeof iend || be32(p + 8) != 13 || memcmp(p + 12, "IHDR", 4) != 0 ||
            memcmp(p + n - sizeof iend, iend, sizeof iend) != 0)
                return -EBADMSG;
        *ret = (ImageInfo) { .format = IMAGE_FORMAT_PNG, .width = be32(p + 16), .height = be32(p + 20) };
        /* The PNG spec caps both at 2^31-1. */
        if (ret->width == 0 || ret->height == 0 || ret->width > INT32_MAX || ret->height > INT32_MAX)
                return -EBADMSG;
        return 0;
}

/* Walks the marker segments up to the first frame header (SOFn). */
static int probe_jpeg(const uint8_t *p, size_t n, ImageInfo *ret) {
        size_t i = 2;

        if (n < 4 || p[n - 2] != 0xFF || p[n - 1] != 0xD9)
                return -EBADMSG;
        while (i + 4 <= n) {
                uint8_t m;
                uint32_t len;

                if (p[i] != 0xFF)
                        return -EBADMSG;
                m = p[i + 1];
                if (m == 0xFF) {        /* fill byte */
                        i++;
                        continue;
                }
                if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {    /* no length */
                        i += 2;
                        continue;
                }
                if (m == 0xD8 || m == 0xD9 || m == 0xDA || m == 0x00)
                        return -EBADMSG;        /* the image data before any frame header */
                len = be16(p + i + 2);
                if (len < 2 || i + 2 + len > n)
                        return -EBADMSG;
                /* SOF0..SOF15 but DHT (C4), JPG (C8) and DAC (CC). */
                if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
                        if (len < 8)
                                return -EBADMSG;
                        *ret = (ImageInfo) { .format = IMAGE_FORMAT_JPEG, .height = be16(p + i + 5),
                                             .width = be16(p + i + 7) };
                        /* A height of 0 is defined later by a DNL marker: not for us. */
                        return ret->width > 0 && ret->height > 0 ? 0 : -EBADMSG;
                }
                i += 2 + len;
        }
        return -EBADMSG;
}

/* Skips a GIF's data sub-blocks at *i; false if they run past the end. */
static bool gif_skip_blocks(const uint8_t *p, size_t n, size_t *i) {
        while (*i < n) {
                uint8_t len = p[(*i)++];
                if (len == 0)
                        return true;
                if (n - *i < len)
                        return false;
                *i += len;
        }
        return false;
}

/* The logical screen, then every block up to the trailer: each frame must
 * lie within the bounds too, and all frames together within four times the
 * pixels (an animation of many full frames is a bomb of its own). */
static int probe_gif(const uint8_t *p, size_t n, ImageInfo *ret) {
        uint64_t pixels = 0;
        uint32_t w, h;
        size_t i = 13;

        if (n < 14)
                return -EBADMSG;
        w = le16(p + 6);
        h = le16(p + 8);
        if (p[10] & 0x80)
                i += 3U << ((p[10] & 7) + 1);
        while (i < n) {
                uint8_t b = p[i++];

                if (b == 0x3B) {
                        if (w == 0 || h == 0 || pixels > 4 * IMAGE_MAX_PIXELS)
                                return -EBADMSG;
                        *ret = (ImageInfo) { .format = IMAGE_FORMAT_GIF, .width = w, .height = h };
                        return 0;
                }
                if (b == 0x21) {        /* extension: label, sub-blocks */
                        if (i >= n)
                                return -EBADMSG;
                        i++;
                        if (!gif_skip_blocks(p, n, &i))
                                return -EBADMSG;
                } else if (b == 0x2C) { /* image: descriptor, local colour table, LZW size, sub-blocks */
                        uint32_t fw, fh;

                        if (n - i < 10)
                                return -EBADMSG;
                        fw = le16(p + i + 4);
                        fh = le16(p + i + 6);
                        /* Report the largest extent anything is drawn at. */
                        w = MAX(w, le16(p + i) + fw);
                        h = MAX(h, le16(p + i + 2) + fh);
                        pixels += (uint64_t) fw * fh;
                        if (pixels > 4 * IMAGE_MAX_PIXELS)
                                return -EBADMSG;
                        if (p[i + 8] & 0x80)
                                i += 3U << ((p[i + 8] & 7) + 1);
                        i += 10;
                        if (!gif_skip_blocks(p, n, &i))
                                return -EBADMSG;
                } else
                        return -EBADMSG;
        }
        return -EBADMSG;
}

/* RIFF, its size covering exactly the file, then the first chunk: VP8X
 * (extended: the canvas), VP8 (lossy) or VP8L (lossless). */
static int probe_webp(const uint8_t *p, size_t n, ImageInfo *ret) {
        const uint8_t *c;
        uint32_t size;

        if (n < 30 || (uint64_t) le32(p + 4) + 8 != n)
                return -EBADMSG;
        c = p + 12;
        size = le32(c + 4);
        if (size > n - 20)
                return -EBADMSG;
        *ret = (ImageInfo) { .format = IMAGE_FORMAT_WEBP };
        if (memcmp(c, "VP8X", 4) == 0) {
                if (size < 10)
                        return -EBADMSG;
                ret->width = le24(c + 12) + 1;
                ret->height = le24(c + 15) + 1;
        } else if (memcmp(c, "VP8 ", 4) == 0) {
                if (size < 10 || c[11] != 0x9D || c[12] != 0x01 || c[13] != 0x2A)
                        return -EBADMSG;
                ret->width = le16(c + 14) & 0x3FFF;
                ret->height = le16(c + 16) & 0x3FFF;
        } else if (memcmp(c, "VP8L", 4) == 0) {
                uint32_t bits;

                if (size < 5 || c[8] != 0x2F)
                        return -EBADMSG;
                bits = le32(c + 9);
                ret->width = (bits & 0x3FFF) + 1;
                ret->height = (bits >> 14 & 0x3FFF) + 1;
        } else
                return -EBADMSG;
        return ret->width > 0 && ret->height > 0 ? 0 : -EBADMSG;
}

int image_probe(const void *data, size_t n, ImageInfo *ret) {
        static const uint8_t png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n' };
        const uint8_t *p = data;
        ImageInfo info;
        int r;

        assert(data || n == 0);
        assert(ret);

        if (n >= sizeof png && memcmp(p, png, sizeof png) == 0)
                r = probe_png(p, n, &info);
        else if (n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF)
                r = probe_jpeg(p, n, &info);
        else if (n >= 6 && (memcmp(p, "GIF87a", 6) == 0 || memcmp(p, "GIF89a", 6) == 0))
                r = probe_gif(p, n, &info);
        else if (n >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0)
                r = probe_webp(p, n, &info);
        else
                r = -EBADMSG;
        if (r < 0)
                return r;
        *ret = info;
        return 0;
}
