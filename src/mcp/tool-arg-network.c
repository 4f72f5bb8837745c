/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tool-arg-network.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "utf8.h"
#include "util.h"

/* The description goes into every model's context: past this many bytes the
 * policy list is cut short. */
#define POLICIES_MAX_BYTES 2048U
/* A name echoed in an error message is cut to this. */
#define NAME_MAX_ECHO 64

bool tool_network_enabled(const EgressConfig *e) {
        return e && e->n_policies > 0;
}

static void describe_policy(FILE *f, const EgressPolicy *p, size_t *used) {
        long start = ftell(f);

        fprintf(f, " \"%s\" (", p->name);
        for (size_t i = 0; p->hosts && p->hosts[i]; i++)
                fprintf(f, "%s%s", i > 0 ? ", " : "", p->hosts[i]);
        fputs("; port", f);
        fputs(p->n_ports > 1 ? "s " : " ", f);
        for (size_t i = 0; i < p->n_ports; i++)
                fprintf(f, "%s%u", i > 0 ? ", " : "", (unsigned) p->ports[i]);
        fputs(p->callers ? "; some callers only)" : ")", f);
        if (start >= 0 && ftell(f) > start)
                *used += (size_t) (ftell(f) - start);
}

void tool_network_describe(FILE *f, const EgressConfig *e) {
        size_t used = 0, left = 0;

        assert(f);

        if (!tool_network_enabled(e))
                return;
        fputs("- Unless you pass \"network\": the name of one of the server's egress policies. Then HTTP and HTTPS "
              "clients that use the HTTP_PROXY/HTTPS_PROXY environment variables (pip, requests, urllib, curl) "
              "reach the policy's hosts, and only those, through a filtering proxy that answers 403 with the "
              "reason otherwise. There is still no DNS in the sandbox: clients that resolve names themselves, raw "
              "sockets, UDP and QUIC reach nothing. Connections and bytes are capped per run. Policies:",
              f);
        for (size_t i = 0; i < e->n_policies; i++) {
                if (used > POLICIES_MAX_BYTES) {
                        left++;
                        continue;
                }
                if (i > 0)
                        fputc(';', f);
                describe_policy(f, e->policies + i, &used);
        }
        if (left > 0)
                fprintf(f, "; and %zu more", left);
        fputs(".\n", f);
}

int tool_network_schema(const EgressConfig *e, json_object **ret) {
        _cleanup_json_ json_object *p = NULL, *names = NULL;

        assert(ret);

        *ret = NULL;
        if (!tool_network_enabled(e))
                return 0;
        names = json_object_new_array();
        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < e->n_policies; i++)
                if (json_append(names, json_object_new_string(e->policies[i].name)) < 0)
                        return -ENOMEM;
        if (json_build(&p,
                       JB_STR("type", "string"),
                       JB_OBJ("enum", TAKE_PTR(names)),
                       JB_STR("description",
                              "An egress policy of this server (see the tool description): proxy-aware HTTP(S) "
                              "clients may then reach its hosts. Without it the run has no network at all."),
                       JB_END) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

static int error_text(char **ret_error, int r) {
        if (r < 0) {
                *ret_error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

static int unknown_policy(const EgressConfig *e, const char *network, char **ret_error) {
        _cleanup_free_ char *list = NULL;
        char echo[NAME_MAX_ECHO + 1];
        size_t size = 0;
        FILE *f;

        f = open_memstream(&list, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < e->n_policies; i++)
                fprintf(f, "%s\"%s\"", i > 0 ? ", " : "", e->policies[i].name);
        if (fclose(f) != 0)
                return -ENOMEM;
        str_printable(network, echo, sizeof echo);
        return error_text(ret_error, asprintf(ret_error,
                                              "unknown network \"%s\": this server's egress policies are %s",
                                              echo, list));
}

int tool_network_check(const EgressConfig *e, const char *network, const char *caller, char **ret_error) {
        const EgressPolicy *p;

        assert(ret_error);

        *ret_error = NULL;
        if (!network)
                return 0;
        if (!tool_network_enabled(e))
                return error_text(ret_error, (*ret_error = strdup(TOOL_NETWORK_OFF_TEXT)) ? 0 : -ENOMEM);
        p = egress_config_find(e, network);
        if (!p)
                return unknown_policy(e, network, ret_error);
        if (!egress_policy_allows_caller(p, caller ?: ""))
                return error_text(ret_error,
                                  asprintf(ret_error,
                                           "the network \"%s\" is not available to you: the server's egress policy "
                                           "lists the callers who may use it (you are %s); runs without "
                                           "\"network\" work as before",
                                           p->name, caller ?: "unknown"));
        return 0;
}
