/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "broker-proto.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "language.h"
#include "macro.h"
#include "server-config.h"
#include "strv.h"
#include "tools-proto.h"

static const char *const broker_error_table[_BROKER_ERROR_MAX] = {
        [BROKER_ERROR_ACCESS_DENIED] = "access-denied",
        [BROKER_ERROR_BAD_REQUEST] = "bad-request",
        [BROKER_ERROR_BUSY] = "busy",
        [BROKER_ERROR_REQUEST_TIMEOUT] = "timeout",
        [BROKER_ERROR_SANDBOX_UNAVAILABLE] = "sandbox-unavailable",
        [BROKER_ERROR_START_FAILED] = "start-failed",
        [BROKER_ERROR_SESSION_NOT_FOUND] = "session-not-found",
        [BROKER_ERROR_SESSION_BUSY] = "session-busy",
        [BROKER_ERROR_SESSION_LIMIT] = "session-limit",
        [BROKER_ERROR_EGRESS_UNAVAILABLE] = "egress-unavailable",
        [BROKER_ERROR_UNAVAILABLE] = "broker-unavailable",
        [BROKER_ERROR_LOST] = "broker-timeout",
        [BROKER_ERROR_UNKNOWN] = "broker-error",
        [BROKER_ERROR_INTERNAL] = "internal",
};

const char *broker_error_to_string(BrokerError e) {
        if (e < 0 || e >= _BROKER_ERROR_MAX)
                return NULL;
        return broker_error_table[e];
}

BrokerError broker_error_from_string(const char *s) {
        if (!s)
                return _BROKER_ERROR_INVALID;
        for (size_t i = 0; i < ELEMENTSOF(broker_error_table); i++)
                if (broker_error_table[i] && streq(broker_error_table[i], s))
                        return (BrokerError) i;
        return _BROKER_ERROR_INVALID;
}

int broker_event_error(BrokerError error, const char *message, json_object **ret) {
        assert(broker_error_to_string(error));
        assert(message);
        assert(ret);

        return json_build(ret,
                          JB_STR("event", "error"),
                          JB_STR("code", broker_error_to_string(error)),
                          JB_STR("message", message),
                          JB_END);
}

int broker_send_error(int fd, BrokerError error, const char *message) {
        _cleanup_json_ json_object *j = NULL;
        int r;

        assert(fd >= 0);

        r = broker_event_error(error, message, &j);
        if (r < 0)
                return r;
        return packet_send(fd, j, NULL, 0);
}

int broker_event_started(const char *run_id, const char *unit, json_object **ret) {
        assert(run_id);
        assert(unit);
        assert(ret);

        return json_build(ret,
                          JB_STR("event", "started"),
                          JB_STR("run_id", run_id),
                          JB_STR("unit", unit),
                          JB_END);
}

int broker_event_exit(const BrokerExit *x, json_object **ret) {
        assert(x);
        assert(x->run_id);
        assert(ret);

        return json_build(ret,
                          JB_STR("event", "exit"),
                          JB_STR("run_id", x->run_id),
                          JB_INT("exit_code", x->exit_code),
                          JB_STR_OR_NULL("signal", x->signal),
                          JB_BOOL("timed_out", x->timed_out),
                          JB_BOOL("oom_killed", x->oom_killed),
                          JB_BOOL("cancelled", x->cancelled),
                          JB_INT("duration_ms", x->duration_usec / 1000),
                          JB_END);
}

int broker_event_session(const char *id, const char *unit, uint64_t idle_timeout_s, uint64_t max_lifetime_s,
                         uint64_t memory_max_bytes, json_object **ret) {
        assert(id);
        assert(unit);
        assert(ret);

        return json_build(ret,
                          JB_STR("event", "session"),
                          JB_STR("session", id),
                          JB_STR("unit", unit),
                          JB_INT("idle_timeout_s", idle_timeout_s),
                          JB_INT("max_lifetime_s", max_lifetime_s),
                          JB_INT("memory_max_bytes", memory_max_bytes),
                          JB_END);
}

int broker_event_closed(unsigned count, json_object **ret) {
        assert(ret);

        return json_build(ret, JB_STR("event", "closed"), JB_INT("count", count), JB_END);
}

/* Adds v under key if there is one (taking a reference). */
static int add_borrowed(json_object *o, const char *key, json_object *v) {
        return v ? json_add(o, key, json_object_get(v)) : 0;
}

int broker_event_info(const BrokerInfoReply *i, json_object **ret) {
        char langs[64];
        _cleanup_json_ json_object *j = NULL;
        int r;

        assert(i);
        assert(i->version && i->python && i->sandbox);
        assert(ret);

        /* In pieces, so that the optional members keep their place. */
        r = json_build(&j,
                       JB_STR("event", "info"),
                       JB_STR("version", i->version),
                       JB_STR("python", i->python),
                       JB_STR("sandbox", i->sandbox),
                       JB_END);
        if (r >= 0 && i->sandbox_failure)
                r = json_add_string(j, "sandbox_failure", i->sandbox_failure);
        if (r >= 0)
                r = json_build_into(j,
                                    JB_INT("default_timeout_s", i->default_timeout_s),
                                    JB_INT("max_timeout_s", i->max_timeout_s),
                                    JB_INT("task_max_timeout_s", i->task_max_timeout_s),
                                    JB_INT("max_code_bytes", i->max_code_bytes),
                                    JB_INT("memory_max_bytes", i->memory_max_bytes),
                                    JB_INT("tasks_max", i->tasks_max),
                                    JB_INT("cpu_quota_percent", i->cpu_quota_percent),
                                    JB_INT("file_size_max_bytes", i->file_size_max_bytes),
                                    JB_INT("tmp_size_max_bytes", i->tmp_size_max_bytes),
                                    JB_INT("max_concurrent", i->max_concurrent),
                                    JB_END);
        if (r >= 0)
                r = add_borrowed(j, "python_version", i->python_version);
        if (r >= 0)
                r = add_borrowed(j, "modules", i->modules);
        if (r >= 0)
                r = json_build_into(j,
                                    JB_INT("pool_size", i->pool_size),
                                    JB_INT("pool_ready", i->pool_ready),
                                    JB_INT("pool_hits", i->pool_hits),
                                    JB_END);
        if (r >= 0)
                r = add_borrowed(j, "preloaded", i->preloaded);
        if (r >= 0)
                r = json_build_into(j,
                                    JB_INT("max_sessions", i->max_sessions),
                                    JB_INT("max_sessions_per_caller", i->max_sessions_per_caller),
                                    JB_INT("max_sessions_per_scope", i->max_sessions_per_scope),
                                    JB_INT("session_idle_s", i->session_idle_s),
                                    JB_INT("session_max_s", i->session_max_s),
                                    JB_INT("sessions", i->sessions),
                                    JB_STR("languages", language_set_to_string(i->languages | LANGUAGE_BIT(
                                                                                       LANGUAGE_PYTHON),
                                                                               langs, sizeof langs)),
                                    /* Runs take a fourth fd, the launcher's result channel. */
                                    JB_BOOL("result_channel", true),
                                    JB_END);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(j);
        return 0;
}

/* ---- The "info" reply, read back ---- */

static uint64_t info_u64(json_object *reply, const char *key) {
        int64_t v;

        assert(key);

        v = json_get_int64(reply, key, -1);
        return v < 0 ? BROKER_INFO_UNSET : (uint64_t) v;
}

static int info_str(json_object *reply, const char *key, char **ret) {
        const char *s;

        assert(key);
        assert(ret);

        s = json_get_string(reply, key);
        *ret = NULL;
        if (s && !(*ret = strdup(s)))
                return -ENOMEM;
        return 0;
}

/* An array's members as strings (json-c's string form; null members are
 * skipped); NULL when the member is no array. */
static int info_strv(json_object *reply, const char *key, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        json_object *v;
        size_t n, k = 0;

        assert(key);
        assert(ret);

        v = json_get(reply, key);
        if (json_object_is_type(v, json_type_array)) {
                n = json_object_array_length(v);
                l = new0(char *, n + 1);
                if (!l)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++) {
                        const char *m = json_object_get_string(json_object_array_get_idx(v, i));
                        if (m && !(l[k++] = strdup(m)))
                                return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int broker_sandbox_info_parse(json_object *reply, BrokerSandboxInfo *ret) {
        _cleanup_(broker_sandbox_info_done) BrokerSandboxInfo i = {
                .max_timeout_s = info_u64(reply, "max_timeout_s"),
                .task_max_timeout_s = info_u64(reply, "task_max_timeout_s"),
                .max_code_bytes = info_u64(reply, "max_code_bytes"),
                .memory_max_bytes = info_u64(reply, "memory_max_bytes"),
                .tasks_max = info_u64(reply, "tasks_max"),
                .cpu_quota_percent = info_u64(reply, "cpu_quota_percent"),
                .max_sessions = info_u64(reply, "max_sessions"),
                .max_sessions_per_caller = info_u64(reply, "max_sessions_per_caller"),
                .session_idle_s = info_u64(reply, "session_idle_s"),
                .session_max_s = info_u64(reply, "session_max_s"),
                .result_channel = json_get_bool(reply, "result_channel"),
        };

        assert(ret);

        if (info_str(reply, "sandbox", &i.sandbox) < 0 ||
            info_str(reply, "sandbox_failure", &i.sandbox_failure) < 0 ||
            info_str(reply, "python_version", &i.python_version) < 0 ||
            info_strv(reply, "modules", &i.modules) < 0 ||
            info_strv(reply, "preloaded", &i.preloaded) < 0)
                return -ENOMEM;
        if (language_set_parse(json_get_string(reply, "languages"), &i.languages) < 0)
                i.languages = LANGUAGE_BIT(LANGUAGE_PYTHON);
        *ret = i;
        i = (BrokerSandboxInfo) {};
        return 0;
}

void broker_sandbox_info_done(BrokerSandboxInfo *info) {
        if (!info)
                return;
        free(info->sandbox);
        free(info->sandbox_failure);
        free(info->python_version);
        strv_free(info->modules);
        strv_free(info->preloaded);
        *info = (BrokerSandboxInfo) {};
}

/* ---- Confirmation of a destructive upstream tool ---- */

_Static_assert(sizeof(((BrokerConfirmAsk *) NULL)->server) == SERVER_NAME_MAX + 1, "confirm name sizes");
_Static_assert(sizeof(((BrokerConfirmAsk *) NULL)->tool) == TOOLS_NAME_MAX + 1, "confirm name sizes");

static int confirm_id(json_object *msg, uint64_t *ret) {
        json_object *id = json_get(msg, "id");
        int64_t n;

        if (!json_object_is_type(id, json_type_int))
                return -EBADMSG;
        n = json_object_get_int64(id);
        if (n <= 0 || (uint64_t) n > BROKER_CONFIRM_ID_MAX)
                return -EBADMSG;
        *ret = (uint64_t) n;
        return 0;
}

int broker_confirm_ask_parse(json_object *msg, BrokerConfirmAsk *ret) {
        const char *server = json_get_string(msg, "server"), *tool = json_get_string(msg, "tool");
        BrokerConfirmAsk a = {};

        assert(ret);

        if (confirm_id(msg, &a.id) < 0 || !server_name_is_valid(server) || !tools_name_is_valid(tool))
                return -EBADMSG;
        strcpy(a.server, server);
        strcpy(a.tool, tool);
        *ret = a;
        return 0;
}

int broker_confirm_answer_parse(json_object *msg, BrokerConfirmAnswer *ret) {
        json_object *accept = json_get(msg, "accept"), *reason = json_get(msg, "reason");
        BrokerConfirmAnswer a = {};

        assert(ret);

        if (confirm_id(msg, &a.id) < 0 || !json_object_is_type(accept, json_type_boolean) ||
            (reason && !json_object_is_type(reason, json_type_string)))
                return -EBADMSG;
        a.accept = json_object_get_boolean(accept);
        if (reason)
                str_printable(json_object_get_string(reason), a.reason, sizeof a.reason);
        *ret = a;
        return 0;
}

int broker_confirm_ask_build(const char *key, const char *value, const BrokerConfirmAsk *a, json_object **ret) {
        assert(key);
        assert(value);
        assert(a);

        return json_build(ret, JB_STR(key, value), JB_INT("id", (int64_t) a->id), JB_STR("server", a->server),
                          JB_STR("tool", a->tool), JB_END);
}

int broker_confirm_answer_build(const char *key, const char *value, const BrokerConfirmAnswer *a, json_object **ret) {
        assert(key);
        assert(value);
        assert(a);

        return json_build(ret, JB_STR(key, value), JB_INT("id", (int64_t) a->id), JB_BOOL("accept", a->accept),
                          JB_STR("reason", a->reason), JB_END);
}
