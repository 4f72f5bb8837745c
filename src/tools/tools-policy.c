/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tools-policy.h"

#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "strv.h"

bool tools_policy_allows_caller(const ToolsServerConfig *c, const char *caller) {
        assert(c);

        if (!c->callers)
                return true;
        if (!caller)
                return false;
        STRV_FOREACH(x, c->callers)
                if (streq(*x, caller))
                        return true;
        return false;
}

/* An empty list, not NULL (every caller). */
static char **strv_empty(void) {
        return new0(char *, 1);
}

static bool strv_has(char **l, const char *s) {
        STRV_FOREACH(x, l)
                if (streq(*x, s))
                        return true;
        return false;
}

static int set_nobody(ToolsServerConfig *c, const char *why, const char **ret_why) {
        char **none = strv_empty();

        if (!none)
                return -ENOMEM;
        strv_free(c->callers);
        c->callers = none;
        *ret_why = why;
        return 1;
}

int tools_policy_apply_egress(ToolsServerConfig *c, const EgressConfig *egress, const char **ret_why) {
        const EgressPolicy *p;
        char **kept = NULL;

        assert(c);
        assert(ret_why);

        *ret_why = NULL;
        if (!c->egress_policy)
                return 0;
        if (!egress)
                return set_nobody(c, "the egress configuration (MCP_EXEC_EGRESS_*) is bad", ret_why);
        p = egress_config_find(egress, c->egress_policy);
        if (!p)
                return set_nobody(c, "its egress policy is not configured (MCP_EXEC_EGRESS_POLICY_*)", ret_why);
        if (!p->callers)
                return 0;       /* the policy admits every caller */
        if (c->shared) {
                /* Every caller the one instance serves must be the policy's. */
                if (!c->callers)
                        return set_nobody(c, "INSTANCE=shared serves every caller, and its egress policy's "
                                          "CALLERS do not admit every caller", ret_why);
                STRV_FOREACH(x, c->callers)
                        if (!egress_policy_allows_caller(p, *x))
                                return set_nobody(c, "INSTANCE=shared serves a caller its egress policy's CALLERS "
                                                  "do not admit", ret_why);
                return 0;
        }
        /* Per caller: those both admit. */
        kept = strv_empty();
        if (!kept)
                return -ENOMEM;
        STRV_FOREACH(x, p->callers)
                if ((!c->callers || strv_has(c->callers, *x)) && strv_extend_n(&kept, *x, strlen(*x)) < 0) {
                        strv_free(kept);
                        return -ENOMEM;
                }
        strv_free(c->callers);
        c->callers = kept;
        return 0;
}

static bool matches_any(char **globs, const char *name) {
        STRV_FOREACH(g, globs)
                if (fnmatch(*g, name, 0) == 0)
                        return true;
        return false;
}

bool tools_policy_allows_tool(const ToolsServerConfig *c, const char *name) {
        assert(c);

        return name && matches_any(c->tools, name);
}

/* A hint's value: 1 true, 0 false, -1 absent or not a boolean. */
static int hint(json_object *annotations, const char *key) {
        json_object *v = json_get(annotations, key);

        if (!v || !json_object_is_type(v, json_type_boolean))
                return -1;
        return json_object_get_boolean(v) ? 1 : 0;
}

bool tools_policy_is_destructive(json_object *tool) {
        json_object *a = json_get(tool, "annotations");

        if (hint(a, "readOnlyHint") == 1)
                return false;
        return hint(a, "destructiveHint") != 0;
}

const char *tools_policy_check_call(const ToolsServerConfig *c, json_object *tool) {
        const char *name = json_get_string(tool, "name");

        assert(c);

        if (!tools_policy_allows_tool(c, name))
                return "this tool is not in the server's allow-list (TOOLS)";
        if (tools_policy_is_destructive(tool) && !matches_any(c->confirmed, name))
                return "this tool is destructive and the operator has not confirmed it (CONFIRMED)";
        return NULL;
}

const char *tools_policy_check_named(const ToolsServerConfig *c, json_object *tools, const char *name) {
        bool found = false;

        assert(c);

        for (size_t i = 0; name && i < json_object_array_length(tools); i++) {
                json_object *t = json_object_array_get_idx(tools, i);
                const char *why;

                if (!streq_ptr(json_get_string(t, "name"), name))
                        continue;
                found = true;
                why = tools_policy_check_call(c, t);
                if (why)
                        return why;
        }
        return found ? NULL : "no such tool on this server";
}

ToolsVerdict tools_policy_verdict(const ToolsServerConfig *c, json_object *tools, const char *name,
                                  const char **ret_why) {
        ToolsVerdict v = TOOLS_VERDICT_ALLOWED;
        bool found = false;

        assert(c);
        assert(ret_why);

        *ret_why = NULL;
        for (size_t i = 0; name && i < json_object_array_length(tools); i++) {
                json_object *t = json_object_array_get_idx(tools, i);

                if (!streq_ptr(json_get_string(t, "name"), name))
                        continue;
                found = true;
                if (!tools_policy_allows_tool(c, name)) {
                        *ret_why = "this tool is not in the server's allow-list (TOOLS)";
                        return TOOLS_VERDICT_REFUSED;
                }
                if (!tools_policy_is_destructive(t))
                        continue;
                if (!matches_any(c->confirmed, name)) {
                        *ret_why = "this tool is destructive and the operator has not confirmed it (CONFIRMED)";
                        v = TOOLS_VERDICT_ASK;
                } else if (v == TOOLS_VERDICT_ALLOWED)
                        v = TOOLS_VERDICT_OPERATOR;
        }
        if (!found) {
                *ret_why = "no such tool on this server";
                return TOOLS_VERDICT_REFUSED;
        }
        return v;
}
