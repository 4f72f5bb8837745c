/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Little-endian integers of n bytes (n <= 8) at any alignment: the length
 * fields of the launcher's and the result channel's frames. */
#include <stddef.h>
#include <stdint.h>

static inline void unaligned_write_le(uint8_t *p, uint64_t v, size_t n) {
        for (size_t i = 0; i < n; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static inline uint64_t unaligned_read_le(const uint8_t *p, size_t n) {
        uint64_t v = 0;

        for (size_t i = 0; i < n; i++)
                v |= (uint64_t) p[i] << (8 * i);
        return v;
}
