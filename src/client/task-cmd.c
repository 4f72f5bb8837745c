/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "task-cmd.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client-conn.h"
#include "client-output.h"
#include "json-util.h"
#include "macro.h"
#include "util.h"

/* JSON-RPC's "Invalid params", what the server answers for a task id that
 * is unknown, expired or another user's (the same for all three). */
#define JSONRPC_INVALID_PARAMS (-32602)
/* tasks/list pages followed, at most: far more than the server holds
 * (MCP_EXEC_MAX_TASKS in pages of 50), so a server that loops ends too. */
#define TASK_LIST_PAGES_MAX 2048

static const char task_usage[] =
        "mcp-exec: usage: mcp-exec task get [--output-dir DIR] ID\n"
        "                 mcp-exec task wait [--output-dir DIR] ID\n"
        "                 mcp-exec task cancel ID\n"
        "                 mcp-exec task list\n";

/* Says on stderr why the server refused a request about task id (NULL:
 * none in particular). */
static int report_error(json_object *resp, const char *id) {
        json_object *e = json_get(resp, "error");
        const char *m = json_get_string(e, "message") ?: "error";
        static const char prefix[] = "Invalid params: ";

        assert(resp);

        if (json_get_int64(e, "code", 0) == JSONRPC_INVALID_PARAMS && strneq(m, prefix, sizeof prefix - 1))
                m += sizeof prefix - 1;
        fputs("mcp-exec: ", stderr);
        if (id) {
                fputs("task ", stderr);
                print_name(stderr, id);
                fputs(": ", stderr);
        }
        print_name(stderr, m);
        if (streq(m, "no such task"))
                fputs(" (none was made with this id, its time to live ended, or another user made it)", stderr);
        fputc('\n', stderr);
        return EXIT_MCP_EXEC_FAILED;
}

int task_print_created(json_object *resp) {
        json_object *task;
        const char *id, *status, *message;

        assert(resp);

        if (json_get(resp, "error"))
                return report_error(resp, NULL);
        task = json_get(json_get(resp, "result"), "task");
        id = json_get_string(task, "taskId");
        if (!id) {
                fprintf(stderr, "mcp-exec: the server answered without a task; does it offer tasks?\n");
                return EXIT_MCP_EXEC_FAILED;
        }
        print_name(stdout, id);
        putchar('\n');
        /* Made, but refused at once (invalid arguments): `task get` shows
         * it too, and that is where a script looks. */
        status = json_get_string(task, "status");
        message = json_get_string(task, "statusMessage");
        if (status && streq(status, "failed")) {
                fputs("mcp-exec: the task failed at once: ", stderr);
                print_name(stderr, message ?: "no reason given");
                fputc('\n', stderr);
        }
        return fflush(stdout) == 0 ? 0 : EXIT_MCP_EXEC_FAILED;
}

/* A new session for one command. */
static int task_session(LineReader **ret) {
        _cleanup_(line_reader_freep) LineReader *lr = NULL;
        int r;

        assert(ret);

        r = line_reader_open(&lr);
        if (r >= 0)
                r = client_initialize(lr, TASK_PROTOCOL_VERSION);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(lr);
        return 0;
}

/* METHOD {"taskId": id}; the response, or NULL (said on stderr). */
static json_object *task_request(LineReader *lr, int rid, const char *method, const char *id) {
        json_object *params = NULL, *resp = NULL;

        assert(lr);
        assert(method);
        assert(id);

        if (json_build(&params, JB_STR("taskId", id), JB_END) < 0) {
                fprintf(stderr, "mcp-exec: out of memory\n");
                return NULL;
        }
        return client_request(lr, rid, method, params, &resp) < 0 ? NULL : resp;
}

/* The task's result (tasks/result, which waits while the task works),
 * printed as `run` prints a run's. */
static int task_result(LineReader *lr, int rid, const char *id, const char *output_dir) {
        _cleanup_json_ json_object *resp = NULL;
        int status;

        assert(lr);
        assert(id);

        resp = task_request(lr, rid, "tasks/result", id);
        if (!resp)
                return EXIT_MCP_EXEC_FAILED;
        if (json_get(resp, "error"))
                return report_error(resp, id);
        status = print_result(resp);
        if (status != EXIT_MCP_EXEC_FAILED && save_outputs(resp, output_dir) < 0)
                return EXIT_MCP_EXEC_FAILED;
        return status;
}

/* Prints the status word on stdout (and the message on stderr): what
 * `task get` says of a task that has no result to show. */
static void print_status(const char *status, const char *message) {
        assert(status);

        print_name(stdout, status);
        putchar('\n');
        if (message) {
                fputs("mcp-exec: ", stderr);
                print_name(stderr, message);
                fputc('\n', stderr);
        }
}

static int task_get(const char *id, const char *output_dir) {
        _cleanup_(line_reader_freep) LineReader *lr = NULL;
        _cleanup_json_ json_object *resp = NULL;
        json_object *task;
        const char *status;

        assert(id);

        if (task_session(&lr) < 0)
                return EXIT_MCP_EXEC_FAILED;
        resp = task_request(lr, 2, "tasks/get", id);
        if (!resp)
                return EXIT_MCP_EXEC_FAILED;
        if (json_get(resp, "error"))
                return report_error(resp, id);
        task = json_get(resp, "result");
        status = json_get_string(task, "status") ?: "";
        if (streq(status, "working")) {
                /* Never waits: that is `task wait`. */
                print_status(status, json_get_string(task, "statusMessage"));
                return EXIT_TASK_WORKING;
        }
        if (streq(status, "completed") || streq(status, "failed"))
                /* Ended: tasks/result answers at once. */
                return task_result(lr, 3, id, output_dir);
        /* cancelled (or a status this command does not know): no result. */
        print_status(status, json_get_string(task, "statusMessage"));
        return EXIT_MCP_EXEC_FAILED;
}

static int task_wait(const char *id, const char *output_dir) {
        _cleanup_(line_reader_freep) LineReader *lr = NULL;

        assert(id);

        if (task_session(&lr) < 0)
                return EXIT_MCP_EXEC_FAILED;
        return task_result(lr, 2, id, output_dir);
}

static int task_cancel(const char *id) {
        _cleanup_(line_reader_freep) LineReader *lr = NULL;
        _cleanup_json_ json_object *resp = NULL;

        assert(id);

        if (task_session(&lr) < 0)
                return EXIT_MCP_EXEC_FAILED;
        resp = task_request(lr, 2, "tasks/cancel", id);
        if (!resp)
                return EXIT_MCP_EXEC_FAILED;
        if (json_get(resp, "error"))
                return report_error(resp, id);
        /* The server cancelled it before answering: its run is stopping. */
        print_status(json_get_string(json_get(resp, "result"), "status") ?: "cancelled", NULL);
        return 0;
}

/* One line a task: id, status, created, and why it failed, if it did. */
static void print_task_line(json_object *task) {
        const char *message = json_get_string(task, "statusMessage");

        assert(task);

        print_name(stdout, json_get_string(task, "taskId") ?: "?");
        putchar('\t');
        print_name(stdout, json_get_string(task, "status") ?: "?");
        putchar('\t');
        print_name(stdout, json_get_string(task, "createdAt") ?: "?");
        if (message) {
                putchar('\t');
                print_name(stdout, message);
        }
        putchar('\n');
}

static int task_list(void) {
        _cleanup_(line_reader_freep) LineReader *lr = NULL;
        _cleanup_free_ char *cursor = NULL;

        if (task_session(&lr) < 0)
                return EXIT_MCP_EXEC_FAILED;
        for (int page = 0; page < TASK_LIST_PAGES_MAX; page++) {
                _cleanup_json_ json_object *resp = NULL;
                json_object *params = json_object_new_object(), *tasks;
                const char *next;

                /* The first page has no cursor, not a null one. */
                if (!params || (cursor && json_build_into(params, JB_STR("cursor", cursor), JB_END) < 0)) {
                        json_object_put(params);
                        fprintf(stderr, "mcp-exec: out of memory\n");
                        return EXIT_MCP_EXEC_FAILED;
                }
                if (client_request(lr, 2 + page, "tasks/list", params, &resp) < 0)
                        return EXIT_MCP_EXEC_FAILED;
                if (json_get(resp, "error"))
                        return report_error(resp, NULL);
                tasks = json_get(json_get(resp, "result"), "tasks");
                for (size_t i = 0; json_object_is_type(tasks, json_type_array) && i < json_object_array_length(tasks);
                     i++)
                        print_task_line(json_object_array_get_idx(tasks, i));
                next = json_get_string(json_get(resp, "result"), "nextCursor");
                if (!next)
                        return fflush(stdout) == 0 ? 0 : EXIT_MCP_EXEC_FAILED;
                free(cursor);
                cursor = strdup(next);
                if (!cursor)
                        return EXIT_MCP_EXEC_FAILED;
        }
        fprintf(stderr, "mcp-exec: the server's task list does not end\n");
        return EXIT_MCP_EXEC_FAILED;
}

int task_cmd(int argc, char *argv[]) {
        static const struct option options[] = {
                { "output-dir", required_argument, NULL, 'o' },
                {},
        };
        const char *verb, *id, *output_dir = NULL;
        int c;

        assert(argc >= 1);
        assert(argv);

        /* argv[0] is "task"; 0 starts getopt afresh, after it, taking
         * options anywhere among the words. */
        optind = 0;
        while ((c = getopt_long(argc, argv, "o:", options, NULL)) >= 0) {
                if (c == 'o') {
                        output_dir = optarg;
                        continue;
                }
                fputs(task_usage, stderr);
                return 2;
        }
        verb = optind < argc ? argv[optind] : "";
        id = optind + 1 < argc ? argv[optind + 1] : NULL;
        if (optind + 2 < argc || (output_dir && !streq(verb, "get") && !streq(verb, "wait"))) {
                fputs(task_usage, stderr);
                return 2;
        }
        if (streq(verb, "list") && !id)
                return task_list();
        if (isempty(id)) {
                fputs(task_usage, stderr);
                return 2;
        }
        if (streq(verb, "get"))
                return task_get(id, output_dir);
        if (streq(verb, "wait"))
                return task_wait(id, output_dir);
        if (streq(verb, "cancel"))
                return task_cancel(id);
        fputs(task_usage, stderr);
        return 2;
}
