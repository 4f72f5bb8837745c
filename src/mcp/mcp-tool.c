/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mcp-tool.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

const McpTool *const mcp_tools[] = {
        &tool_exec,
        &tool_session_create,
        &tool_session_close,
        NULL,
};

void mcp_tool_args_done(McpToolArgs *a) {
        assert(a);

        exec_args_done(&a->exec);
        free(a->handle);
        a->handle = NULL;
        a->session_id[0] = 0;
}

bool mcp_tool_available(const McpTool *t, const McpServerConfig *c) {
        assert(t);
        assert(c);

        return !t->available || t->available(c);
}

const McpTool *mcp_tool_find(const McpServerConfig *c, const char *name) {
        assert(c);
        assert(name);

        for (const McpTool *const *t = mcp_tools; *t; t++)
                if (streq((*t)->name, name) && mcp_tool_available(*t, c))
                        return *t;
        return NULL;
}

/* "only \"a\"", or "\"a\", \"b\" and \"c\"". */
static int tool_list_text(const McpServerConfig *c, char *buf, size_t size) {
        size_t n = 0, k = 0, len = 0;
        int r;

        for (const McpTool *const *t = mcp_tools; *t; t++)
                n += mcp_tool_available(*t, c);
        for (const McpTool *const *t = mcp_tools; *t; t++) {
                if (!mcp_tool_available(*t, c))
                        continue;
                r = snprintf(buf + len, size - len, "%s\"%s\"",
                             n == 1 ? "only " : k == 0 ? "" : k + 1 == n ? " and " : ", ", (*t)->name);
                if (r < 0 || (size_t) r >= size - len)
                        return -ENOBUFS;
                len += r;
                k++;
        }
        return 0;
}

char *mcp_tool_unknown_text(const McpServerConfig *c, const char *name) {
        char list[256] = "";
        char *m;

        assert(c);
        assert(name);

        /* The names are ours and short: the buffer does not run out. */
        if (tool_list_text(c, list, sizeof list) < 0)
                return NULL;
        if (asprintf(&m, "Unknown tool: %.*s (the tools are %s)", utf8_prefix_len(name, 64), name, list) < 0)
                return NULL;
        return m;
}
