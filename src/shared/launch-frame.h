/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The framing on the sandbox's stdin: a fixed header naming the length of the
 * code that follows; everything after the code is the program's own stdin.
 * The code never travels through a unit property, argv or the environment. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LAUNCH_FRAME_MAGIC "MCPX"
#define LAUNCH_FRAME_HEADER_SIZE 16   /* magic[4], version u32 LE, code length u64 LE */
#define LAUNCH_FRAME_VERSION 1
/* Version 2: the code is followed by the input files, before the program's
 * stdin:  count u32 LE, then per file  name length u16 LE | data length u64 LE
 * | name | data. Names are plain file names (launch_file_name_valid()). */
#define LAUNCH_FRAME_VERSION_FILES 2
#define LAUNCH_FILES_HEADER_SIZE 4
#define LAUNCH_FILE_ENTRY_HEADER_SIZE 10
#define LAUNCH_FILES_MAX 64
#define LAUNCH_FILE_NAME_MAX 255

void launch_frame_header(uint64_t code_len, uint8_t ret[static LAUNCH_FRAME_HEADER_SIZE]);
void launch_frame_header_version(uint32_t version, uint64_t code_len, uint8_t ret[static LAUNCH_FRAME_HEADER_SIZE]);

/* -EBADMSG: not our magic or version; -EINVAL: empty code; -EFBIG: over max. */
int launch_frame_parse(const uint8_t *buf, size_t n, uint64_t max_code_len, uint64_t *ret_code_len);
/* The same, for either version; *ret_version says whether files follow. */
int launch_frame_parse_version(const uint8_t *buf, size_t n, uint64_t max_code_len, uint64_t *ret_code_len,
                               uint32_t *ret_version);

void launch_files_header(uint32_t count, uint8_t ret[static LAUNCH_FILES_HEADER_SIZE]);
/* -EBADMSG: more than LAUNCH_FILES_MAX. */
int launch_files_parse(const uint8_t buf[static LAUNCH_FILES_HEADER_SIZE], uint32_t *ret_count);
void launch_file_entry_header(uint16_t name_len, uint64_t data_len, uint8_t ret[static LAUNCH_FILE_ENTRY_HEADER_SIZE]);
/* -EBADMSG: an empty or over-long name; -EFBIG: data over max_data. */
int launch_file_entry_parse(const uint8_t buf[static LAUNCH_FILE_ENTRY_HEADER_SIZE], uint64_t max_data,
                            uint16_t *ret_name_len, uint64_t *ret_data_len);

/* A plain file name: 1..LAUNCH_FILE_NAME_MAX bytes, no '/', not "." or "..",
 * no NUL or control characters (C0, DEL), valid UTF-8. */
bool launch_file_name_valid(const char *name, size_t len);
