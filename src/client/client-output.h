/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the command makes of an exec result: the program's output on our
 * stdout and stderr, an exit status that stands for its end, and the
 * figures and files it returned saved beneath --output-dir. Shared by
 * `run` and the task commands, so a task's result looks like a run's. */

#include <json-c/json.h>
#include <stdio.h>

/* mcp-exec(1), EXIT STATUS. */
#define EXIT_MCP_EXEC_FAILED 125
#define EXIT_TIMEOUT 124

/* Far more than the server takes; the server says what its limit is. */
#define READ_MAX (256U * 1024U * 1024U)

/* Prints a name from the server (which may hold anything) so that it cannot
 * drive the terminal. */
void print_name(FILE *f, const char *s);

/* resp is the JSON-RPC response to the exec call: prints the program's
 * output and returns the exit status that stands for its end. */
int print_result(json_object *resp);

/* Saves the returned figures and files beneath dir (NULL: only says how
 * many there are), and says what was left out. */
int save_outputs(json_object *resp, const char *dir);
