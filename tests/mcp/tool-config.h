/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The McpServerConfig the tool tests (test-tool-*.c) start from: the limits
 * every tool's definition and argument checks read. A test adds what its
 * tool needs (sessions, the result channel, egress, packages):
 *
 *     static McpServerConfig config = { TOOL_CONFIG, .max_sessions = 4 };
 *
 * The numbers are the ones the tests assert in descriptions and errors
 * (a 50-byte code limit, 100 bytes of stdin, 300 s at most, ...). */

#include "mcp-config.h"

#define TOOL_CONFIG                             \
        .default_timeout_s = 30,                \
        .max_timeout_s = 300,                   \
        .max_output_bytes = 1 << 20,            \
        .max_stdin_bytes = 100,                 \
        .max_code_bytes = 50,                   \
        .max_concurrent = 2,                    \
        .max_queue = 4,                         \
        .memory_max_bytes = 256ULL << 20
