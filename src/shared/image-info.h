/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What an image returned from a run really is: the format by its magic and
 * the dimensions from its header, without decoding it. The front end checks
 * them against the format its name or origin claims and against fixed
 * bounds, so that a file named .png is a PNG and a small file does not
 * claim a picture a client would choke on when it decodes it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds of a returned image: the Anthropic API refuses a side over 8000
 * pixels, and 50 Mpixel are 200 MB decoded as RGBA. */
#define IMAGE_MAX_SIDE 8000U
#define IMAGE_MAX_PIXELS UINT64_C(50000000)

typedef enum ImageFormat {
        IMAGE_FORMAT_PNG,
        IMAGE_FORMAT_JPEG,
        IMAGE_FORMAT_GIF,
        IMAGE_FORMAT_WEBP,
        _IMAGE_FORMAT_MAX,
        _IMAGE_FORMAT_INVALID = -22,
} ImageFormat;

typedef struct ImageInfo {
        ImageFormat format;
        uint32_t width, height;         /* of the largest frame (GIF), else the canvas */
} ImageInfo;

/* "image/png", …; NULL out of range. */
const char *image_format_to_mime_type(ImageFormat f);
/* _IMAGE_FORMAT_INVALID for other types (image/svg+xml included: text). */
ImageFormat image_format_from_mime_type(const char *mime_type);

/* Reads the header of data[0..n). -EBADMSG: not PNG, JPEG, GIF or WebP, or
 * a header that is truncated, inconsistent with n, or claims zero pixels. */
int image_probe(const void *data, size_t n, ImageInfo *ret);

/* Within IMAGE_MAX_SIDE on both sides and IMAGE_MAX_PIXELS in all. */
bool image_size_ok(uint32_t width, uint32_t height);
