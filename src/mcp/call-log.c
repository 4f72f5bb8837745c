/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal entry of an exec call (call-log.h). */

#include "call-log.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <syslog.h>

#include "log.h"
#include "mcp-internal.h"
#include "tool-arg-packages.h"

/* How the result channel went, for the journal: "" without one. */
static const char *channel_state(const ExecResult *r) {
        if (!r || !r->result_channel)
                return "";
        return r->outputs_error ? "violation" : r->outputs_lost ? "lost" : "ok";
}

/* args and r may be NULL (not parsed, not run). Sizes and counts only:
 * never code, stdin, file names or output. */
void mcp_call_log_entry(McpSession *s, const McpRevision *rev, const char *request_id, const ExecArgs *args,
                        const ExecResult *r, uint64_t output_bytes, uint64_t duration_ms, int level,
                        const char *result) {
        char uid[16] = "";
        size_t outputs_returned = 0;

        assert(s);
        assert(rev);
        assert(request_id);

        if (s->peer_uid != (uid_t) -1)
                (void) snprintf(uid, sizeof uid, "%u", (unsigned) s->peer_uid);
        for (size_t i = 0; r && i < r->n_outputs; i++)
                outputs_returned += r->outputs[i].data && !r->outputs[i].reason;
        log_struct_after(level,
                         "MESSAGE=exec call %s of session %s: %s", request_id, s->id, result,
                         "MCP_SESSION=%s", s->id,
                         "MCP_REQUEST_ID=%s", request_id,
                         "MCP_RUN_ID=%s", r && r->run_id ? r->run_id : "",
                         "MCP_TRANSPORT=%s", s->peer_transport,
                         "MCP_CLIENT_UID=%s", uid,
                         "MCP_PROTOCOL_VERSION=%s", rev->version,
                         "MCP_CODE_BYTES=%zu", args ? args->code_len : 0,
                         "MCP_STDIN_BYTES=%zu", args ? args->stdin_len : 0,
                         "MCP_INPUT_FILES=%zu", args ? args->n_files : 0,
                         "MCP_INPUT_FILES_BYTES=%" PRIu64, args ? args->files_bytes : 0,
                         "MCP_OUTPUT_BYTES=%" PRIu64, output_bytes,
                         "MCP_OUTPUTS=%zu", r ? r->n_outputs : 0,
                         "MCP_OUTPUTS_RETURNED=%zu", outputs_returned,
                         "MCP_RESULT_CHANNEL=%s", channel_state(r),
                         "MCP_DURATION_MS=%" PRIu64, duration_ms,
                         "MCP_EGRESS_POLICY=%s", args && args->network ? args->network : "",
                         /* How many, never which: they are arguments. */
                         "MCP_PACKAGES=%zu", args && tool_packages_requested(args->packages)
                                                     ? json_object_array_length(args->packages) : (size_t) 0,
                         "MCP_RESULT=%s", result);
        if (r && r->outputs_error)
                /* Our own words about the frames, never their content. */
                log_struct_after(LOG_WARNING,
                                 "MESSAGE=exec call %s of session %s: the result channel broke its protocol: %s",
                                 request_id, s->id, r->outputs_error,
                                 "MCP_SESSION=%s", s->id,
                                 "MCP_REQUEST_ID=%s", request_id,
                                 "MCP_RUN_ID=%s", r->run_id ?: "");
}
