/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/sandbox-session-table.[ch], the front end's record of the
 * sandbox sessions it handed out: an entry is its owner's (id, caller and
 * scope), so what anyone else hears from the broker about that id leaves it
 * alone. */

#include <systemd/sd-event.h>

#include "sandbox-session-table.h"
#include "macro.h"
#include "test-helpers.h"

#define ID_A "0123456789abcdef0123456789abcdef"
#define ID_B "fedcba9876543210fedcba9876543210"
#define SCOPE_1 "11111111111111111111111111111111"
#define SCOPE_2 "22222222222222222222222222222222"
#define HOUR (3600 * USEC_PER_SEC)

static SandboxSessionTable *table(sd_event **ret_event) {
        SandboxSessionTable *t;

        ASSERT_EQ_INT(sd_event_new(ret_event), 0);
        /* Nothing here talks to the broker: no socket needed. */
        ASSERT_EQ_INT(sandbox_session_table_new(*ret_event, "/nonexistent/broker.sock", &t), 0);
        return t;
}

TEST(test_owner_only) {
        sd_event *e;
        SandboxSessionTable *t = table(&e);

        ASSERT_EQ_INT(sandbox_session_table_add(t, ID_A, &(SandboxOwner) { "http:token", SCOPE_1 }, HOUR, HOUR), 0);
        ASSERT_EQ_INT(sandbox_session_table_add(t, ID_B, &(SandboxOwner) { "uid:1000", "" }, HOUR, HOUR), 0);
        ASSERT_EQ_INT(sandbox_session_table_alive(t), 2);

        /* Another MCP session of the same token, a stateless request, another
         * caller: the broker told them "not found", which is not about A. */
        sandbox_session_table_remove(t, ID_A, &(SandboxOwner) { "http:token", SCOPE_2 });
        sandbox_session_table_remove(t, ID_A, &(SandboxOwner) { "http:token", "" });
        sandbox_session_table_remove(t, ID_A, &(SandboxOwner) { "uid:0", SCOPE_1 });
        sandbox_session_table_remove(t, ID_B, &(SandboxOwner) { "uid:0", "" });
        ASSERT_EQ_INT(sandbox_session_table_alive(t), 2);

        /* Its owner's word counts. */
        sandbox_session_table_remove(t, ID_A, &(SandboxOwner) { "http:token", SCOPE_1 });
        ASSERT_EQ_INT(sandbox_session_table_alive(t), 1);
        sandbox_session_table_remove(t, ID_B, &(SandboxOwner) { "uid:1000", "" });
        ASSERT_EQ_INT(sandbox_session_table_alive(t), 0);

        sandbox_session_table_free(t);
        sd_event_unref(e);
}

TEST(test_close_scope_takes_only_its_own) {
        sd_event *e;
        SandboxSessionTable *t = table(&e);

        ASSERT_EQ_INT(sandbox_session_table_add(t, ID_A, &(SandboxOwner) { "http:token", SCOPE_1 }, HOUR, HOUR), 0);
        ASSERT_EQ_INT(sandbox_session_table_add(t, ID_B, &(SandboxOwner) { "http:token", SCOPE_2 }, HOUR, HOUR), 0);
        /* Asks the broker (unreachable here: logged, the entries go anyway). */
        sandbox_session_table_close_scope(t, &(SandboxOwner) { "http:token", SCOPE_1 });
        ASSERT_EQ_INT(sandbox_session_table_alive(t), 1);
        sandbox_session_table_close_scope(t, &(SandboxOwner) { "http:token", "" });
        ASSERT_EQ_INT(sandbox_session_table_alive(t), 1);
        sandbox_session_table_remove(t, ID_B, &(SandboxOwner) { "http:token", SCOPE_2 });
        ASSERT_EQ_INT(sandbox_session_table_alive(t), 0);

        sandbox_session_table_free(t);
        sd_event_unref(e);
}

int main(void) {
        RUN(test_owner_only);
        RUN(test_close_scope_takes_only_its_own);
        return 0;
}
