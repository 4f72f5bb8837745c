/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The framing on the sandbox's stdin: a fixed header naming the length of the
 * code that follows; everything after the code is the program's own stdin.
 * The code never travels through a unit property, argv or the environment. */

#include <stddef.h>
#include <stdint.h>

#define LAUNCH_FRAME_MAGIC "MCPX"
#define LAUNCH_FRAME_HEADER_SIZE 16   /* magic[4], version u32 LE, code length u64 LE */
#define LAUNCH_FRAME_VERSION 1

void launch_frame_header(uint64_t code_len, uint8_t ret[static LAUNCH_FRAME_HEADER_SIZE]);

/* -EBADMSG: not our magic or version; -EINVAL: empty code; -EFBIG: over max. */
int launch_frame_parse(const uint8_t *buf, size_t n, uint64_t max_code_len, uint64_t *ret_code_len);
