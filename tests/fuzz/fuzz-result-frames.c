/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the result channel as a hostile launcher could write it.
 * Byte 0 picks the chunk size the bytes arrive in (1..256) and byte 1 the
 * limits; the rest is the channel, fed to the result reader (frames, meta,
 * image and path checks), then the items become a CallToolResult as the
 * exec tool builds it. Checks: what is returned respects every limit, the
 * listing and the bytes read stay bounded, and what is returned is what it says (images probe as their type within the bounds, text is
 * UTF-8), the reply stays under TOOL_EXEC_REPLY_MAX, nothing leaks. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec-client.h"
#include "image-info.h"
#include "json-util.h"
#include "result-reader.h"
#include "revision.h"
#include "tool-exec.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ResultLimits limits = { .max_images = 3, .max_image_bytes = 2048, .max_files = 3, .max_result_bytes = 6000 };
        McpServerConfig config = {
                .default_timeout_s = 30, .max_timeout_s = 300, .max_output_bytes = 1024, .max_code_bytes = 1024,
                .max_concurrent = 1, .result_channel = true, .max_images = 3, .max_image_bytes = 2048,
                .max_files_out = 3, .max_result_bytes = 6000,
        };
        ResultReader r;
        ExecResult res = { .stdout_text = (char *) "", .stderr_text = (char *) "", .cpu_ms = -1,
                           .memory_peak_bytes = -1, .result_channel = true };
        uint64_t images = 0, files = 0, bytes = 0;
        size_t chunk = 1, n_items;
        ResultItem *items;
        int k = 0;

        if (size >= 2) {
                chunk = (size_t) data[0] + 1;
                if (data[1] & 1)
                        limits.max_images = 0;
                if (data[1] & 2)
                        limits.max_result_bytes = 100;
                if (data[1] & 4)
                        limits.max_image_bytes = 80;
                data += 2;
                size -= 2;
        }

        result_reader_init(&r, &limits);
        for (size_t off = 0; off < size && k == 0;) {
                size_t n = size - off < chunk ? size - off : chunk;
                k = result_reader_feed(&r, data + off, n);
                off += n;
                if (k < 0 && (!r.error || r.state != RESULT_READER_DONE))
                        abort();
                if (k > 0 && !r.ended)
                        abort();
        }
        if (k == 0)
                result_reader_eof(&r);
        /* One way to end, or two: END, then bytes after it. */
        if ((r.ended + r.lost + !!r.error != 1) && !(r.ended && r.error && !r.lost))
                abort();
        if (r.data_kept > limits.max_result_bytes || r.data_total > RESULT_DRAIN_MAX || r.n_frames > RESULT_FRAMES_MAX + 1 ||
            r.n_items > limits.max_images + limits.max_files + RESULT_SKIPPED_LISTED_MAX + limits.max_images)
                abort();

        for (size_t i = 0; i < r.n_items; i++) {
                const ResultItem *it = r.items + i;
                ImageInfo info;

                if (!it->mime_type && !it->reason)
                        abort();
                if (it->path && (it->path_len != strlen(it->path) || strncmp(it->path, RESULT_OUTPUTS_DIR, 13) != 0))
                        abort();
                if (!it->reason != !!it->data)
                        abort();
                if (it->reason && !utf8_is_valid(it->reason, strlen(it->reason)))
                        abort();
                if (!it->data)
                        continue;
                bytes += it->size;
                if (it->image) {
                        images++;
                        if (it->size > limits.max_image_bytes || image_probe(it->data, it->size, &info) < 0 ||
                            strcmp(image_format_to_mime_type(info.format), it->mime_type) != 0 ||
                            !image_size_ok(info.width, info.height))
                                abort();
                } else {
                        files++;
                        if (it->text && (!utf8_is_valid((const char *) it->data, it->size) || memchr(it->data, 0, it->size)))
                                abort();
                }
        }
        if (images > limits.max_images || files > limits.max_files || bytes > limits.max_result_bytes)
                abort();

        /* The reply built from it, on the oldest and the newest revision. */
        items = result_reader_steal_items(&r, &n_items);
        res.outputs = items;
        res.n_outputs = n_items;
        res.outputs_lost = r.lost;
        res.outputs_error = r.error;
        res.outputs_unlisted = r.unlisted;
        res.outputs_unlisted_more = r.unlisted_more;
        res.outputs_unlisted_reason = r.unlisted_reason;
        /* The installer's report: valid UTF-8 throughout, the log bounded. */
        res.packages = result_reader_take_packages(&r);
        if (r.have_packages != !!res.packages)
                abort();
        if (res.packages) {
                const char *log = json_get_string(res.packages, "log");
                size_t len;

                if (!json_object_is_type(json_get(res.packages, "ok"), json_type_boolean) ||
                    (!log && !json_get(res.packages, "log_left_out")) ||
                    (log && (strlen(log) > 3 * RESULT_PACKAGES_LOG_MAX || !utf8_is_valid(log, strlen(log)))) ||
                    !json_serialize(res.packages, &len) || !utf8_is_valid(json_serialize(res.packages, NULL), len))
                        abort();
        }
        for (int v = 0; v < 2; v++) {
                json_object *reply = tool_exec_result(&config, &res, mcp_revision_find(v ? "2025-11-25" : "2024-11-05"));
                size_t len;

                if (!reply || !json_serialize(reply, &len) || len > TOOL_EXEC_REPLY_MAX)
                        abort();
                json_object_put(reply);
        }
        for (size_t i = 0; i < n_items; i++)
                result_item_done(items + i);
        free(items);
        json_object_put(res.packages);
        result_reader_done(&r);
        return 0;
}
