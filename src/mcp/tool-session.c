/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tool-session.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "json-util.h"
#include "language.h"
#include "log.h"
#include "macro.h"
#include "mcp-tool.h"
#include "node-id.h"
#include "tool-arg-language.h"
#include "tool-arg-network.h"
#include "tool-arg-packages.h"
#include "tool-result.h"
#include "util.h"

const char tool_session_gone_text[] =
        "session not found: it was closed, expired (unused too long, or past its lifetime), or lost (its "
        "interpreter died: out of memory, a crash, os._exit(), or killed after a timeout it ignored), or it is "
        "not yours. Its variables and files are gone; start again with session_create.";

bool tool_session_available(const McpServerConfig *c) {
        return c->max_sessions > 0;
}

static char *describe_create(const McpServerConfig *c) {
        _cleanup_free_ char *network = NULL;
        char mem[FORMAT_BYTES_MAX];
        size_t size = 0;
        char *s;
        FILE *f;

        if (tool_network_enabled(c->egress)) {
                f = open_memstream(&network, &size);
                if (!f)
                        return NULL;
                fputs("\n- A session created with \"network\" keeps that network for all its calls (exec in the "
                      "session takes no \"network\"); without it the session has none.\n",
                      f);
                tool_network_describe(f, c->egress);
                if (fclose(f) != 0)
                        return NULL;
                if (size > 0 && network[size - 1] == '\n')
                        network[size - 1] = 0;
        }
        if (tool_packages_enabled(c->packages)) {
                _cleanup_free_ char *text = NULL;
                size_t len = 0;

                f = open_memstream(&text, &len);
                if (!f)
                        return NULL;
                fprintf(f, "%s\n- A session created with \"packages\" has them installed before its first call's code "
                           "runs (that call's result reports the install), and keeps them for its life; exec in the "
                           "session may add more with its own \"packages\".\n",
                        network ?: "");
                tool_packages_describe(f, c->packages);
                if (fclose(f) != 0)
                        return NULL;
                if (len > 0 && text[len - 1] == '\n')
                        text[len - 1] = 0;
                free(network);
                network = TAKE_PTR(text);
        }
        if (asprintf(&s,
                     "Starts a Python session: a sandbox whose interpreter keeps its variables, imports and files in "
                     "/tmp from one exec call to the next. Pass the returned \"session\" handle to exec; without it, "
                     "exec runs in a new sandbox every time.\n"
                     "\n"
                     "- Same sandbox as exec: no network, private /tmp, memory %s for the whole session (it does not "
                     "grow: past it the session is lost), CPU and process limits as exec.\n"
                     "- Lifetime: a session ends after %" PRIu64 " s without a call, and %" PRIu64 " s after it "
                     "started at the latest, or with session_close. Then its state is gone; exec with its handle "
                     "says so.\n"
                     "- One call at a time: a second call while one runs is refused as busy.\n"
                     "- A call's timeout interrupts it (KeyboardInterrupt) and keeps the session; code that does not "
                     "stop within 2 s is killed and the session is lost.\n"
                     "- Each call returns only its own stdout and stderr: what a background thread prints between "
                     "calls is dropped.\n"
                     "- At most %" PRIu64 " sessions per caller (%" PRIu64 " on this server): close those you no "
                     "longer need.%s",
                     format_bytes(c->memory_max_bytes, mem), c->session_idle_s, c->session_max_s,
                     c->max_sessions_per_caller, c->max_sessions, network ?: "") < 0)
                return NULL;
        return s;
}

static const char create_output_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"session\":{\"type\":\"string\",\"description\":\"The handle to pass to exec and session_close.\"},"
        "\"idle_timeout_s\":{\"type\":\"integer\",\"description\":\"The session ends after this long without a "
        "call.\"},"
        "\"max_lifetime_s\":{\"type\":\"integer\",\"description\":\"The session ends this long after it started.\"},"
        "\"memory_max_bytes\":{\"type\":\"integer\",\"description\":\"Memory for the whole session.\"}"
        "},\"required\":[\"session\",\"idle_timeout_s\",\"max_lifetime_s\",\"memory_max_bytes\"]}";

static const char close_output_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"session\":{\"type\":\"string\"},"
        "\"closed\":{\"type\":\"boolean\"}"
        "},\"required\":[\"session\",\"closed\"]}";

static json_object *definition(const McpRevision *rev, const char *name, const char *title, const char *description,
                               const char *input, const char *output, bool destructive) {
        _cleanup_json_ json_object *t = json_object_new_object(), *a = NULL;

        if (!t || !description)
                return NULL;
        if (json_add_string(t, "name", name) < 0 || (rev->titles && json_add_string(t, "title", title) < 0) ||
            json_add_string(t, "description", description) < 0 ||
            json_add(t, "inputSchema", json_tokener_parse(input)) < 0 ||
            (rev->structured && json_add(t, "outputSchema", json_tokener_parse(output)) < 0))
                return NULL;
        if (rev->annotations) {
                a = json_object_new_object();
                if (!a || json_add_string(a, "title", title) < 0 || json_add_bool(a, "readOnlyHint", false) < 0 ||
                    json_add_bool(a, "destructiveHint", destructive) < 0 ||
                    json_add_bool(a, "idempotentHint", !strcmp(name, TOOL_SESSION_CLOSE_NAME)) < 0 ||
                    json_add_bool(a, "openWorldHint", false) < 0 || json_add(t, "annotations", TAKE_PTR(a)) < 0)
                        return NULL;
        }
        return TAKE_PTR(t);
}

json_object *tool_session_create_definition(const McpServerConfig *c, const McpRevision *rev) {
        _cleanup_free_ char *d = describe_create(c);
        _cleanup_json_ json_object *t = NULL, *network = NULL, *packages = NULL;

        t = definition(rev, TOOL_SESSION_CREATE_NAME, "Start a Python session", d,
                       "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
                       create_output_schema, false);
        if (!t || tool_network_schema(c->egress, &network) < 0)
                return NULL;
        if (network && json_add(json_get(json_get(t, "inputSchema"), "properties"), "network", TAKE_PTR(network)) < 0)
                return NULL;
        if (tool_packages_schema(c->packages, &packages) < 0 ||
            (packages &&
             json_add(json_get(json_get(t, "inputSchema"), "properties"), "packages", TAKE_PTR(packages)) < 0))
                return NULL;
        if (tool_language_schema_add(c, json_get(json_get(t, "inputSchema"), "properties"), true) < 0)
                return NULL;
        return TAKE_PTR(t);
}

json_object *tool_session_close_definition(const McpServerConfig *c, const McpRevision *rev) {
        return definition(rev, TOOL_SESSION_CLOSE_NAME, "End a Python session",
                          "Ends a session made by session_create: its interpreter, variables and files are gone. "
                          "Closing one that already ended says so.",
                          rev->stateless ? "{\"type\":\"object\",\"properties\":{\"session\":{\"type\":\"string\","
                                           "\"x-mcp-header\":\"Session\",\"description\":\"The handle session_create "
                                           "returned.\"}},\"required\":[\"session\"],\"additionalProperties\":false}"
                                         : "{\"type\":\"object\",\"properties\":{\"session\":{\"type\":\"string\","
                                           "\"description\":\"The handle session_create returned.\"}},\"required\":"
                                           "[\"session\"],\"additionalProperties\":false}",
                          close_output_schema, true);
}

int tool_session_parse_handle(const char *handle, char ret_id[static TOOL_SESSION_ID_LEN + 1]) {
        const char *dot;

        if (!handle)
                return -EINVAL;
        dot = strrchr(handle, '.');
        if (!dot || strlen(dot + 1) != TOOL_SESSION_ID_LEN)
                return -EINVAL;
        for (const char *p = dot + 1; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return -EINVAL;
        if (!node_id_owns(handle))
                return -EXDEV;
        memcpy(ret_id, dot + 1, TOOL_SESSION_ID_LEN + 1);
        return 0;
}

int tool_session_format_handle(const char *id, char **ret) {
        char *s;

        if (!id || strlen(id) != TOOL_SESSION_ID_LEN)
                return -EINVAL;
        if (asprintf(&s, "%s.%s", node_id(), id) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int argument_error(char **ret_error, const char *text) {
        *ret_error = strdup(text);
        return *ret_error ? -EINVAL : -ENOMEM;
}

int tool_session_create_parse_arguments(json_object *arguments, const char **ret_network, json_object **ret_packages,
                                        char **ret_error) {
        json_object *v = NULL;

        *ret_network = NULL;
        *ret_packages = NULL;
        if (!arguments)
                return 0;
        json_object_object_foreach(arguments, key, val) {
                (void) val;
                if (!streq(key, "network") && !streq(key, "packages") && !streq(key, "language"))
                        return argument_error(ret_error, "session_create takes only \"network\", \"packages\" and "
                                                         "\"language\" (all optional)");
        }
        if (json_object_object_get_ex(arguments, "packages", &v) && !json_object_is_type(v, json_type_null))
                *ret_packages = v;
        if (json_object_object_get_ex(arguments, "network", &v) && !json_object_is_type(v, json_type_null)) {
                if (!json_object_is_type(v, json_type_string))
                        return argument_error(ret_error, "\"network\" must be the name of an egress policy");
                *ret_network = json_object_get_string(v);
        }
        return 0;
}

int tool_session_close_parse_arguments(json_object *arguments, const char **ret_handle, char **ret_error) {
        json_object *v = json_get(arguments, "session");

        if (!json_object_is_type(v, json_type_string))
                return argument_error(ret_error, "session_close needs \"session\": the handle session_create returned");
        json_object_object_foreach(arguments, key, val) {
                (void) val;
                if (!streq(key, "session"))
                        return argument_error(ret_error, "session_close takes only \"session\"");
        }
        *ret_handle = json_object_get_string(v);
        return 0;
}

/* A text block with the JSON, and the same as structuredContent. */
static json_object *session_result(const McpRevision *rev, json_object *structured_in) {
        _cleanup_json_ json_object *structured = structured_in, *r = json_object_new_object(),
                                   *content = json_object_new_array(), *block = json_object_new_object();
        const char *text;
        size_t len;

        if (!structured || !r || !content || !block || !(text = json_serialize(structured, &len)) ||
            json_add_string(block, "type", "text") < 0 ||
            json_add(block, "text", json_object_new_string_len(text, (int) len)) < 0 ||
            json_append(content, TAKE_PTR(block)) < 0 || json_add(r, "content", TAKE_PTR(content)) < 0 ||
            (rev->structured && json_add(r, "structuredContent", TAKE_PTR(structured)) < 0) ||
            json_add_bool(r, "isError", false) < 0)
                return NULL;
        return TAKE_PTR(r);
}

json_object *tool_session_created_result(const McpRevision *rev, const char *handle, json_object *reply) {
        json_object *s = json_object_new_object();

        if (!s || json_add_string(s, "session", handle) < 0 ||
            json_add_int(s, "idle_timeout_s", json_get_int64(reply, "idle_timeout_s", 0)) < 0 ||
            json_add_int(s, "max_lifetime_s", json_get_int64(reply, "max_lifetime_s", 0)) < 0 ||
            json_add_int(s, "memory_max_bytes", json_get_int64(reply, "memory_max_bytes", 0)) < 0) {
                json_object_put(s);
                return NULL;
        }
        return session_result(rev, s);
}

json_object *tool_session_closed_result(const McpRevision *rev, const char *handle) {
        json_object *s = json_object_new_object();

        if (!s || json_add_string(s, "session", handle) < 0 || json_add_bool(s, "closed", true) < 0) {
                json_object_put(s);
                return NULL;
        }
        return session_result(rev, s);
}

char *tool_session_failure_text(BrokerError error, const char *message) {
        const char *m = message ?: "no details";
        char *s;
        int r;

        switch (error) {
        case BROKER_ERROR_SESSION_NOT_FOUND:
                return strdup(tool_session_gone_text);
        case BROKER_ERROR_SESSION_BUSY:
                r = asprintf(&s, "the session is busy: another call of it is running, and a session runs one call "
                                 "at a time; call again when it has returned");
                break;
        case BROKER_ERROR_SESSION_LIMIT:
                r = asprintf(&s, "no new session: %s", m);
                break;
        case BROKER_ERROR_EGRESS_UNAVAILABLE:
                r = asprintf(&s, "no new session: its network (the egress proxy) could not be set up: %s; retry "
                                 "later, or create the session without \"network\"", m);
                break;
        case BROKER_ERROR_SANDBOX_UNAVAILABLE:
                r = asprintf(&s, "the sandbox is unavailable: %s", m);
                break;
        case BROKER_ERROR_UNAVAILABLE:
                r = asprintf(&s, "the sandbox broker is unreachable (%s)", m);
                break;
        default:
                r = asprintf(&s, "the session request failed (%s): %s", broker_error_to_string(error) ?: "error", m);
        }
        return r < 0 ? NULL : s;
}

/* session_create waits for a unit and an interpreter; session_close for a reply. */
#define SESSION_CREATE_TIMEOUT_USEC (90 * USEC_PER_SEC)
#define SESSION_CLOSE_TIMEOUT_USEC (30 * USEC_PER_SEC)

static void outcome_set(McpToolOutcome *ret, int level, const char *result, json_object *tool_result) {
        assert(ret);
        assert(result);

        ret->log_level = level;
        (void) snprintf(ret->log_result, sizeof ret->log_result, "%s", result);
        ret->result = tool_result;
}

/* True if the broker refused: ret says so. */
static bool session_op_failed(BrokerError error, const char *message, McpToolOutcome *ret) {
        _cleanup_free_ char *text = NULL;
        char result[sizeof ret->log_result];

        assert(ret);

        if (error == BROKER_ERROR_NONE)
                return false;
        text = tool_session_failure_text(error, message);
        (void) snprintf(result, sizeof result, "error:%s", broker_error_to_string(error) ?: "?");
        outcome_set(ret, error == BROKER_ERROR_SESSION_NOT_FOUND ? LOG_INFO : LOG_WARNING, result,
                    text ? tool_error_result(text) : NULL);
        return true;
}

static int create_parse(const McpServerConfig *c, json_object *arguments, McpToolArgs *a, char **ret_error) {
        int r;

        assert(c);
        assert(a);

        r = tool_session_create_parse_arguments(arguments, &a->network, &a->packages, ret_error);
        if (r < 0)
                return r;
        /* Issue 42: the session's language, fixed for its calls. */
        return tool_language_parse(c, json_get(arguments, "language"), a->packages, &a->exec.language, ret_error);
}

static void create_done(const McpToolContext *ctx, const McpToolArgs *a, json_object *reply, BrokerError error,
                        const char *message, McpToolOutcome *ret) {
        _cleanup_free_ char *handle = NULL;
        const char *id;

        assert(ctx);
        assert(a);
        assert(ret);

        if (session_op_failed(error, message, ret))
                return;
        id = json_get_string(reply, "session");
        if (!streq_ptr(json_get_string(reply, "event"), "session") || tool_session_format_handle(id, &handle) < 0) {
                outcome_set(ret, LOG_WARNING, "error:broker-error",
                            tool_error_result("the session could not start: the broker answered something "
                                                   "else"));
                return;
        }
        /* Bookkeeping only: without it we might exit idle under the session. */
        if (sandbox_session_table_add(ctx->sessions, id, &ctx->owner,
                                      (uint64_t) MAX(json_get_int64(reply, "idle_timeout_s", 0), 0) * USEC_PER_SEC,
                                      (uint64_t) MAX(json_get_int64(reply, "max_lifetime_s", 0), 0) * USEC_PER_SEC) < 0)
                (void) log_oom();
        outcome_set(ret, LOG_INFO, "session-created", tool_session_created_result(ctx->rev, handle, reply));
}

static int close_parse(const McpServerConfig *c, json_object *arguments, McpToolArgs *a, char **ret_error) {
        const char *handle = NULL;
        int r;

        assert(c);
        assert(a);

        r = tool_session_close_parse_arguments(arguments, &handle, ret_error);
        if (r < 0)
                return r;
        if (tool_session_parse_handle(handle, a->session_id) < 0)
                return -ESRCH;
        a->handle = strdup(handle);
        return a->handle ? 0 : -ENOMEM;
}

static void close_done(const McpToolContext *ctx, const McpToolArgs *a, json_object *reply, BrokerError error,
                       const char *message, McpToolOutcome *ret) {
        assert(ctx);
        assert(a);
        assert(ret);

        /* Closed now or not there: either way it is gone. */
        if (error == BROKER_ERROR_NONE || error == BROKER_ERROR_SESSION_NOT_FOUND)
                sandbox_session_table_remove(ctx->sessions, a->session_id, &ctx->owner);
        if (session_op_failed(error, message, ret))
                return;
        outcome_set(ret, LOG_INFO, "session-closed", tool_session_closed_result(ctx->rev, a->handle));
}

const McpTool tool_session_create = {
        .name = TOOL_SESSION_CREATE_NAME,
        .available = tool_session_available,
        .definition = tool_session_create_definition,
        .parse = create_parse,
        .broker_op = "session_create",
        .broker_timeout_usec = SESSION_CREATE_TIMEOUT_USEC,
        .broker_done = create_done,
};

const McpTool tool_session_close = {
        .name = TOOL_SESSION_CLOSE_NAME,
        .available = tool_session_available,
        .definition = tool_session_close_definition,
        .parse = close_parse,
        .broker_op = "session_close",
        .broker_timeout_usec = SESSION_CLOSE_TIMEOUT_USEC,
        .broker_done = close_done,
};
