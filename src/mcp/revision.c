/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "revision.h"

#include <assert.h>

#include "json-util.h"
#include "jsonrpc.h"
#include "macro.h"

/* Oldest first, as mcp_protocol_versions[]. */
static const McpRevision revisions[] = {
        { .version = "2024-11-05", .logging = true },
        { .version = "2025-03-26", .batches = true, .annotations = true, .progress_message = true, .logging = true },
        { .version = "2025-06-18", .annotations = true, .progress_message = true, .titles = true, .structured = true,
          .logging = true, .elicitation = true },
        { .version = "2025-11-25", .annotations = true, .progress_message = true, .titles = true, .structured = true,
          .logging = true, .tasks = true, .elicitation = true, .elicitation_modes = true },
        { .version = "2026-07-28", .stateless = true, .annotations = true, .progress_message = true, .titles = true,
          .structured = true },
};

const char *const mcp_protocol_versions[] = {
        "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", NULL,
};

const McpRevision *mcp_revision_find(const char *version) {
        if (!version)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(revisions); i++)
                if (streq(revisions[i].version, version))
                        return &revisions[i];
        return NULL;
}

const McpRevision *mcp_revision_latest_legacy(void) {
        for (size_t i = ELEMENTSOF(revisions); i > 0; i--)
                if (!revisions[i - 1].stateless)
                        return &revisions[i - 1];
        return NULL;
}

const McpRevision *mcp_revision_stateless(void) {
        for (size_t i = ELEMENTSOF(revisions); i > 0; i--)
                if (revisions[i - 1].stateless)
                        return &revisions[i - 1];
        return NULL;
}

json_object *mcp_revision_supported_json(void) {
        json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (size_t i = ELEMENTSOF(revisions); i > 0; i--) {
                json_object *v = json_object_new_string(revisions[i - 1].version);
                if (!v || json_object_array_add(a, v) < 0) {
                        json_object_put(v);
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}

bool mcp_request_is_stateless(const char *method, json_object *meta) {
        json_object *pv;
        const McpRevision *rev;

        assert(method);

        if (streq(method, "initialize"))
                return false;
        if (streq(method, "server/discover"))
                return true;
        if (!json_object_object_get_ex(meta, MCP_META_PROTOCOL_VERSION, &pv))
                return false;
        if (!json_object_is_type(pv, json_type_string))
                return true;
        rev = mcp_revision_find(json_object_get_string(pv));
        return !rev || rev->stateless;
}

json_object *mcp_error_unsupported_version(json_object *id, const char *requested, size_t len) {
        _cleanup_json_ json_object *data = json_object_new_object();

        assert(requested);

        if (!data || json_add(data, "supported", mcp_revision_supported_json()) < 0 ||
            json_add(data, "requested", json_object_new_string_len(requested, (int) len)) < 0)
                return NULL;
        return jsonrpc_error_new(id, MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                                 TAKE_PTR(data));
}
