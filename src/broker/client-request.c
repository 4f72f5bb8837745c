/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a client's "run" or "session_*" request says beside its op: the fds,
 * the timeout, the caller, the network and the packages, each taken into the
 * Client or answered as a bad request here (client.h). */
#include "client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "broker-proto.h"
#include "json-util.h"
#include "manager.h"
#include "packages.h"
#include "util.h"

static bool fd_is_stream(int fd) {
        struct stat st;
        return fstat(fd, &st) >= 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

int client_parse_network(Client *c, json_object *req) {
        json_object *v;

        assert(c);
        assert(req);

        if (!json_object_object_get_ex(req, "network", &v) || json_object_is_type(v, json_type_null))
                return 0;
        /* Fail closed: the front end checked the name against the same
         * file, but a policy we do not know is no network at all. */
        if (!json_object_is_type(v, json_type_string) ||
            !egress_config_find(&c->manager->egress, json_object_get_string(v))) {
                (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST,
                                         "network: not an egress policy of this server");
                return -EINVAL;
        }
        free(c->network);
        c->network = strdup(json_object_get_string(v));
        if (!c->network) {
                (void) client_send_oom(c);
                return -ENOMEM;
        }
        return 0;
}

int client_parse_packages(Client *c, json_object *req) {
        json_object *p = NULL;
        char message[512];
        int r;

        assert(c);
        assert(req);

        /* Fail closed, as the network: the front end checked the specs
         * already, but nothing else ever reaches a launcher. */
        r = packages_parse(req, packages_enabled(&c->manager->config), c->manager->config.max_packages, &p,
                           message, sizeof message);
        if (r < 0) {
                if (r == -ENOMEM)
                        (void) client_send_oom(c);
                else
                        (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, message);
                return r;
        }
        json_object_put(c->packages);
        c->packages = p;
        return 0;
}

int client_parse_language(Client *c, json_object *req) {
        char message[256];
        json_object *v;

        assert(c);
        assert(req);

        c->language = LANGUAGE_PYTHON;
        if (!json_object_object_get_ex(req, "language", &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_string) ||
            language_from_string(json_object_get_string(v), &c->language) < 0) {
                (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST,
                                         "language: not one of python, bash, javascript");
                return -EINVAL;
        }
        if (manager_language_check(c->manager, c->language, message, sizeof message) < 0) {
                (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, message);
                return -EINVAL;
        }
        /* Packages are Python's (a wheelhouse of wheels). */
        if (c->language != LANGUAGE_PYTHON && c->packages) {
                (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, "packages: only for Python");
                return -EINVAL;
        }
        return 0;
}

int client_take_fds(Client *c, const char *what, int fds[], size_t n_fds) {
        char message[128];

        assert(c);
        assert(what);
        assert(fds || n_fds == 0);
        assert(c->n_run_fds == 0);

        if (n_fds < 3 || n_fds > 4) {
                (void) snprintf(
                        message, sizeof message,
                        "a %s needs three or four pipe or socket fds: stdin, stdout, stderr and the result channel",
                        what);
                (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, message);
                return -EINVAL;
        }
        for (size_t i = 0; i < n_fds; i++)
                if (!fd_is_stream(fds[i])) {
                        (void) snprintf(message, sizeof message, "a %s's fds must be pipes or sockets", what);
                        (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, message);
                        return -EINVAL;
                }
        for (size_t i = 0; i < n_fds; i++)
                c->run_fds[i] = TAKE_FD(fds[i]);
        c->n_run_fds = n_fds;
        return 0;
}

int client_parse_timeout(Client *c, json_object *req, uint64_t *ret) {
        json_object *v;
        int64_t t;

        assert(c);
        assert(req);
        assert(ret);

        if (!json_object_object_get_ex(req, "timeout_s", &v)) {
                *ret = c->manager->config.default_timeout_s;
                return 0;
        }
        if (!json_object_is_type(v, json_type_int) || (t = json_object_get_int64(v)) < 0) {
                (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, "timeout_s must be a non-negative integer");
                return -EINVAL;
        }
        /* 0 means the default; anything else is clamped to [1, max]. The
         * front ends clamp a plain call to MCP_EXEC_MAX_TIMEOUT_S and only a
         * task's run (MCP tasks) to MCP_EXEC_TASK_MAX_TIMEOUT_S, the most a
         * run may take here: both are the operator's, and a compromised
         * front end gains a longer sandboxed run at most. */
        *ret = t > 0 ? CLAMP((uint64_t) t, 1, c->manager->config.task_max_timeout_s)
                     : c->manager->config.default_timeout_s;
        return 0;
}

/* The caller the front end names for a run, if any: only a key for the fair
 * shares (manager.h), never trusted for more. */
int client_parse_caller(Client *c, json_object *req) {
        json_object *v;
        const char *caller = "";

        assert(c);
        assert(req);

        if (json_object_object_get_ex(req, "caller", &v)) {
                if (!json_object_is_type(v, json_type_string) ||
                    json_object_get_string_len(v) > (int) SANDBOX_SESSION_OWNER_MAX) {
                        (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, "caller must be a short string");
                        return -EINVAL;
                }
                caller = json_object_get_string(v);
        }
        c->caller = strdup(caller);
        if (!c->caller) {
                (void) client_send_oom(c);
                return -ENOMEM;
        }
        return 0;
}
