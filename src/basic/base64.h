/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Base64 (RFC 4648, standard alphabet, padded) for the exec tool's input
 * files and the images and blobs of its results. */

#include <stddef.h>
#include <stdint.h>

/* Length of the encoding of n bytes (without a NUL); SIZE_MAX if it would
 * not fit in a size_t. */
size_t base64_encoded_len(size_t n);

/* A new NUL-terminated encoding of data[0..n). -ENOMEM. */
int base64_encode(const void *data, size_t n, char **ret, size_t *ret_len);

/* Decodes s[0..n): the standard alphabet, '=' padding optional but correct
 * when present, line breaks (CR, LF) ignored, nothing else. The decoded size
 * is checked against max before anything is allocated. -EINVAL: not base64
 * (*ret_offset, if set, gets the offending byte's position); -EFBIG: more than
 * max bytes decoded; -ENOMEM. The result is never NULL, even when empty. */
int base64_decode(const char *s, size_t n, uint64_t max, uint8_t **ret, size_t *ret_len, size_t *ret_offset);
