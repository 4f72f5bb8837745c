/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The result channel: a pipe from the launcher's trusted parent (the unit's
 * main process) to the front end, next to the program's stdout and stderr.
 * The program never holds it, so nothing it prints can pass for a result.
 * A sequence of frames:
 *
 *   magic "MCPR" | type u8 | 3 zero bytes | meta length u32 LE | data length u64 LE
 *   meta: a JSON object (at most RESULT_FRAME_META_MAX bytes)
 *   data: raw bytes (an image's or a file's content)
 *
 * and it ends with RESULT_FRAME_END. A channel that ends without it means the
 * launcher died (the code killed it, or the unit was stopped). Both sides
 * treat the other as untrusted: every length is checked against the limits
 * before anything is allocated. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RESULT_FRAME_MAGIC "MCPR"
#define RESULT_FRAME_HEADER_SIZE 20
#define RESULT_FRAME_META_MAX 4096U
#define RESULT_PACKAGES_LOG_MAX 16384U

typedef enum ResultFrameType {
        /* meta {"exit_code":N} or {"signal":N}, and {"duration_us":N}: how the program ended */
        RESULT_FRAME_STATUS = 1,
        /* meta {"source":"figure"|"file", "path":"/tmp/outputs/…" (files), "index":N (figures)}; data: the image */
        RESULT_FRAME_IMAGE = 2,
        /* meta {"path":"/tmp/outputs/…"}; data: the file */
        RESULT_FRAME_FILE = 3,
        /* meta {"path":…, "reason":…, "bytes":N (if known)}: an output left out, and why */
        RESULT_FRAME_SKIPPED = 4,
        /* meta {"preloaded":[…], "failed":[…]}: what a warm interpreter had imported */
        RESULT_FRAME_INFO = 5,
        /* no meta, no data: nothing follows */
        RESULT_FRAME_END = 6,
        /* meta: what the installer did for "packages" (issue 23), before the
         * code ran, package-spec.h:
         *   {"ok":true|false, "error":"…" (only when !ok: the caller's isError text),
         *    "requested":["spec",…], "installed":[{"name":…,"version":…},…],
         *    "already":["spec",…] (a session's, installed by an earlier call),
         *    "replaced":["name",…] (system distributions shadowed by another version),
         *    "fresh_interpreter":bool (the preload was dropped for them), "duration_us":N}
         * data: pip's own output (stdout and stderr), at most RESULT_PACKAGES_LOG_MAX
         * bytes (its tail), never mixed into the program's stdout. On !ok the code
         * did not run: a STATUS and END follow. */
        RESULT_FRAME_PACKAGES = 7,
        _RESULT_FRAME_TYPE_MAX,
} ResultFrameType;

typedef struct ResultFrameHeader {
        ResultFrameType type;
        uint32_t meta_len;
        uint64_t data_len;
} ResultFrameHeader;

void result_frame_header(ResultFrameType type, uint32_t meta_len, uint64_t data_len,
                         uint8_t ret[static RESULT_FRAME_HEADER_SIZE]);

/* -EBADMSG: not our magic, an unknown type, non-zero padding, meta over
 * RESULT_FRAME_META_MAX, or meta/data where the type has none; -EFBIG: data
 * over max_data. */
int result_frame_parse(const uint8_t *buf, size_t n, uint64_t max_data, ResultFrameHeader *ret);
