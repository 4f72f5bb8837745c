/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The journal entry of one exec call (tools/call of exec, a task's run):
 * sizes, counts and outcomes with structured fields, never code, stdin,
 * file names, arguments or output. */

#include <stdint.h>

#include "exec-client.h"
#include "mcp-session.h"
#include "revision.h"
#include "tool-exec.h"

/* args and r may be NULL (not parsed, not run). A result channel that broke
 * its protocol gets a second entry, with our own words about it. */
void mcp_call_log_entry(McpSession *s, const McpRevision *rev, const char *request_id, const ExecArgs *args,
                        const ExecResult *r, uint64_t output_bytes, uint64_t duration_ms, int level,
                        const char *result);
