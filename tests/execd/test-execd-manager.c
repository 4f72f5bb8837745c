/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/execd/execd-manager.[ch], the front end's daemon object,
 * without systemd: what it refuses to start with, the HTTP socket it binds
 * itself, and the broker's "info" reply it serves from (fake-broker.c). */

#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "execd-manager.h"
#include "fake-broker.h"
#include "test-helpers.h"

static const char *const env_names[] = {
        "MCP_EXEC_TRANSPORT", "MCP_EXEC_ADDR", "MCP_EXEC_IDLE_EXIT_S", "MCP_EXEC_AUTH_TOKEN",
        "MCP_EXEC_AUTH_TOKENS_FILE", "MCP_EXEC_ALLOW_REMOTE_WITHOUT_TOKEN", "CREDENTIALS_DIRECTORY",
        "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
};

static void clean_env(void) {
        for (size_t i = 0; i < sizeof env_names / sizeof env_names[0]; i++)
                ASSERT_EQ_INT(unsetenv(env_names[i]), 0);
        ASSERT_EQ_INT(setenv("MCP_EXEC_NODE_ID", "node-a", 1), 0);
}

static int new_manager(const char *broker, bool stdio, Manager **ret) {
        ManagerArgs args = { .broker_socket = broker, .stdio = stdio };

        return manager_new(&args, ret);
}

/* Fail closed, and say why (the journal): never a daemon that serves nothing
 * or serves others without a token. */
TEST(test_refusals) {
        Manager *m = NULL;

        clean_env();
        ASSERT_EQ_INT(new_manager("/nonexistent", false, &m), -EINVAL);        /* nothing to serve */
        ASSERT_TRUE(m == NULL);
        ASSERT_EQ_INT(setenv("MCP_EXEC_IDLE_EXIT_S", "soon", 1), 0);
        ASSERT_EQ_INT(new_manager("/nonexistent", true, &m), -EINVAL);
        ASSERT_TRUE(m == NULL);
        clean_env();
        ASSERT_EQ_INT(setenv("MCP_EXEC_TRANSPORT", "http", 1), 0);
        ASSERT_EQ_INT(setenv("MCP_EXEC_ADDR", "127.0.0.1:nope", 1), 0);
        ASSERT_EQ_INT(new_manager("/nonexistent", false, &m), -EINVAL);
        /* Every interface, no token. */
        ASSERT_EQ_INT(setenv("MCP_EXEC_ADDR", ":0", 1), 0);
        ASSERT_EQ_INT(new_manager("/nonexistent", false, &m), -EPERM);
        ASSERT_TRUE(m == NULL);
        clean_env();
}

TEST(test_stdio) {
        Manager *m = NULL;

        clean_env();
        ASSERT_EQ_INT(new_manager("/nonexistent", true, &m), 0);
        ASSERT_TRUE(m->own_stdio_wanted && !m->socket_activated);
        ASSERT_TRUE(m->http_listen_fd < 0 && m->stdio_listen_fd < 0);
        ASSERT_EQ_U64(m->idle_usec, 60 * USEC_PER_SEC);
        m = manager_free(m);
        /* MCP_EXEC_TRANSPORT=stdio is --stdio. */
        ASSERT_EQ_INT(setenv("MCP_EXEC_TRANSPORT", "stdio", 1), 0);
        ASSERT_EQ_INT(setenv("MCP_EXEC_IDLE_EXIT_S", "5", 1), 0);
        ASSERT_EQ_INT(new_manager("/nonexistent", false, &m), 0);
        ASSERT_TRUE(m->own_stdio_wanted);
        ASSERT_EQ_U64(m->idle_usec, 5 * USEC_PER_SEC);
        manager_free(m);
        manager_free(NULL);
        clean_env();
}

/* Its own HTTP socket, and with the broker away it serves at once, from its
 * own configuration alone. */
TEST(test_http_without_broker) {
        Manager *m = NULL;

        clean_env();
        ASSERT_EQ_INT(setenv("MCP_EXEC_TRANSPORT", "http", 1), 0);
        ASSERT_EQ_INT(setenv("MCP_EXEC_ADDR", "127.0.0.1:0", 1), 0);
        ASSERT_EQ_INT(new_manager("/nonexistent/broker.sock", false, &m), 0);
        ASSERT_TRUE(m->http_listen_fd >= 0 && !m->socket_activated);
        ASSERT_TRUE(m->http_auth.check_host);   /* loopback: the Host check is on */
        ASSERT_EQ_INT(manager_start(m), 0);
        ASSERT_TRUE(m->server && m->http && m->status && !m->stdio && !m->info_query);
        ASSERT_TRUE(m->http_listen_fd < 0);     /* the server took it */
        ASSERT_EQ_U64(m->info.memory_max_bytes, BROKER_INFO_UNSET);
        ASSERT_TRUE(m->info.python_version == NULL);
        manager_free(m);
        clean_env();
}

/* The broker's answer is read once into m->info, and only then it serves. */
TEST(test_http_with_broker) {
        sd_event *e = NULL;
        FakeBroker *b = NULL;
        Manager *m = NULL;

        clean_env();
        ASSERT_TRUE(sd_event_default(&e) >= 0);
        ASSERT_EQ_INT(fake_broker_new(e, &b), 0);
        b->result_channel = true;
        ASSERT_EQ_INT(setenv("MCP_EXEC_TRANSPORT", "http", 1), 0);
        ASSERT_EQ_INT(setenv("MCP_EXEC_ADDR", "127.0.0.1:0", 1), 0);
        ASSERT_EQ_INT(new_manager(b->path, false, &m), 0);
        ASSERT_TRUE(m->event == e);
        ASSERT_EQ_INT(manager_start(m), 0);
        ASSERT_TRUE(m->info_query && !m->server);
        for (int i = 0; i < 1000 && !m->server; i++)
                ASSERT_TRUE(sd_event_run(e, 100 * 1000) >= 0);
        ASSERT_TRUE(m->server && m->http && !m->info_query);
        ASSERT_STREQ(m->info.sandbox, "ok");
        ASSERT_STREQ(m->info.python_version, "3.11.2");
        ASSERT_TRUE(m->info.result_channel);
        ASSERT_EQ_U64(m->info.max_timeout_s, BROKER_INFO_UNSET);
        manager_free(m);
        fake_broker_free(b);
        sd_event_unref(e);
        clean_env();
}

int main(void) {
        RUN(test_refusals);
        RUN(test_stdio);
        RUN(test_http_without_broker);
        RUN(test_http_with_broker);
        return 0;
}
