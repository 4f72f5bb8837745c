/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sandbox-session-table.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker-request.h"
#include "json-util.h"
#include "list.h"
#include "log.h"
#include "util.h"

#define CLOSE_TIMEOUT_USEC (30 * USEC_PER_SEC)
/* Outstanding scope closes: each holds a broker connection. */
#define CLOSES_MAX 64U

typedef struct Entry Entry;
struct Entry {
        LIST_FIELDS(Entry, entries);
        char id[33];
        char scope[33];
        char *caller;
        uint64_t idle_usec, last_used, ends;    /* ends: the absolute cap */
};

typedef struct Close Close;
struct Close {
        SandboxSessionTable *table;
        LIST_FIELDS(Close, closes);
        BrokerRequest *request;
};

struct SandboxSessionTable {
        sd_event *event;
        char *broker_socket;
        LIST_HEAD(Entry, entries);
        unsigned n_entries;
        LIST_HEAD(Close, closes);
        unsigned n_closes;
};

static void entry_free(SandboxSessionTable *t, Entry *e) {
        LIST_REMOVE(entries, t->entries, e);
        assert(t->n_entries > 0);
        t->n_entries--;
        free(e->caller);
        free(e);
}

static void close_free(Close *c) {
        SandboxSessionTable *t = c->table;

        LIST_REMOVE(closes, t->closes, c);
        t->n_closes--;
        broker_request_free(c->request);
        free(c);
}

SandboxSessionTable *sandbox_session_table_free(SandboxSessionTable *t) {
        if (!t)
                return NULL;
        while (t->entries)
                entry_free(t, t->entries);
        while (t->closes)
                close_free(t->closes);
        sd_event_unref(t->event);
        free(t->broker_socket);
        free(t);
        return NULL;
}

int sandbox_session_table_new(sd_event *e, const char *broker_socket, SandboxSessionTable **ret) {
        _cleanup_(sandbox_session_table_freep) SandboxSessionTable *t = NULL;

        assert(e);
        assert(broker_socket);
        assert(ret);

        t = new0(SandboxSessionTable, 1);
        if (!t)
                return -ENOMEM;
        t->event = sd_event_ref(e);
        t->broker_socket = strdup(broker_socket);
        if (!t->broker_socket)
                return -ENOMEM;
        *ret = TAKE_PTR(t);
        return 0;
}

static Entry *find(SandboxSessionTable *t, const char *id, const SandboxOwner *owner) {
        assert(t);
        assert(id);
        assert(owner);
        assert(owner->caller);
        assert(owner->scope);

        LIST_FOREACH(entries, e, t->entries)
                if (streq(e->id, id) && streq(e->caller, owner->caller) && streq(e->scope, owner->scope))
                        return e;
        return NULL;
}

static bool expired(const Entry *e, uint64_t now) {
        return now >= e->ends || now - e->last_used >= e->idle_usec;
}

static void prune(SandboxSessionTable *t) {
        uint64_t now = now_usec();

        LIST_FOREACH_SAFE(entries, e, n, t->entries)
                if (expired(e, now))
                        entry_free(t, e);
}

int sandbox_session_table_add(SandboxSessionTable *t, const char *id, const SandboxOwner *owner, uint64_t idle_usec,
                              uint64_t max_usec) {
        uint64_t now = now_usec();
        Entry *e;

        assert(t);
        assert(id && strlen(id) < sizeof e->id);
        assert(owner);
        assert(owner->caller);
        assert(owner->scope && strlen(owner->scope) < sizeof e->scope);

        prune(t);
        if (t->n_entries >= SANDBOX_SESSION_TABLE_MAX) {
                /* The oldest goes: the broker may outlive our idle exit for it. */
                Entry *last = t->entries;
                while (last && last->entries_next)
                        last = last->entries_next;
                if (last)
                        entry_free(t, last);
        }
        e = new0(Entry, 1);
        if (!e)
                return -ENOMEM;
        e->caller = strdup(owner->caller);
        if (!e->caller) {
                free(e);
                return -ENOMEM;
        }
        (void) snprintf(e->id, sizeof e->id, "%s", id);
        (void) snprintf(e->scope, sizeof e->scope, "%s", owner->scope);
        /* A little past the broker's own timers: it ends them, not us. */
        e->idle_usec = idle_usec + 5 * USEC_PER_SEC;
        e->last_used = now;
        e->ends = now + max_usec + 5 * USEC_PER_SEC;
        LIST_PREPEND(entries, t->entries, e);
        t->n_entries++;
        return 0;
}

void sandbox_session_table_touch(SandboxSessionTable *t, const char *id, const SandboxOwner *owner) {
        Entry *e;

        assert(t);
        e = find(t, id, owner);
        if (e)
                e->last_used = now_usec();
}

void sandbox_session_table_remove(SandboxSessionTable *t, const char *id, const SandboxOwner *owner) {
        Entry *e;

        assert(t);
        e = find(t, id, owner);
        if (e)
                entry_free(t, e);
}

unsigned sandbox_session_table_alive(SandboxSessionTable *t) {
        assert(t);
        prune(t);
        return t->n_entries;
}

unsigned sandbox_session_table_alive_of(SandboxSessionTable *t, const char *caller) {
        unsigned n = 0;

        assert(t);
        assert(caller);
        prune(t);
        LIST_FOREACH(entries, e, t->entries)
                n += streq(e->caller, caller);
        return n;
}

unsigned sandbox_session_table_alive_in_scope(SandboxSessionTable *t, const SandboxOwner *owner) {
        unsigned n = 0;

        assert(t);
        assert(owner);
        if (isempty(owner->scope) || !owner->caller)
                return 0;
        prune(t);
        LIST_FOREACH(entries, e, t->entries)
                if (streq(e->scope, owner->scope) && streq(e->caller, owner->caller))
                        n++;
        return n;
}

static void on_closed(BrokerRequest *r, json_object *reply, BrokerError error, const char *message, void *userdata) {
        Close *c = userdata;

        if (error != BROKER_ERROR_NONE)
                log_warning("Closing the sandbox sessions of an ended MCP session failed: %s; they end when idle.",
                            message ?: "unknown error");
        else if (json_get_int64(reply, "count", 0) > 0)
                log_info("Closed %" PRIi64 " sandbox session(s) of an ended MCP session.",
                         json_get_int64(reply, "count", 0));
        close_free(c);
}

/* Asks the broker for op (session_close_scope, or session_close of id)
 * on what owner has, without waiting for the answer. */
static void close_start(SandboxSessionTable *t, const char *op, const char *caller, const char *scope,
                        const char *id) {
        _cleanup_json_ json_object *msg = NULL;
        Close *c;

        assert(t);
        assert(op);
        assert(caller);
        assert(scope);

        if (t->n_closes >= CLOSES_MAX) {
                log_warning("Too many sandbox session closes outstanding; these end when idle.");
                return;
        }
        msg = json_object_new_object();
        c = new0(Close, 1);
        if (!msg || !c || json_add_string(msg, "op", op) < 0 || json_add_string(msg, "caller", caller) < 0 ||
            json_add_string(msg, "scope", scope) < 0 || (id && json_add_string(msg, "session", id) < 0)) {
                free(c);
                (void) log_oom();
                return;
        }
        c->table = t;
        if (broker_request_start(t->event, t->broker_socket, msg, CLOSE_TIMEOUT_USEC, on_closed, c, &c->request) < 0) {
                log_warning("Cannot ask the broker to close the sandbox sessions of an ended MCP session; they end "
                            "when idle.");
                free(c);
                return;
        }
        LIST_PREPEND(closes, t->closes, c);
        t->n_closes++;
}

void sandbox_session_table_close_scope(SandboxSessionTable *t, const SandboxOwner *owner) {
        bool any = false;

        assert(t);
        assert(owner);
        assert(owner->caller);

        if (isempty(owner->scope))
                return;
        LIST_FOREACH_SAFE(entries, e, n, t->entries)
                if (streq(e->scope, owner->scope)) {
                        entry_free(t, e);
                        any = true;
                }
        if (any)
                close_start(t, "session_close_scope", owner->caller, owner->scope, NULL);
}

unsigned sandbox_session_table_close_caller(SandboxSessionTable *t, const char *caller) {
        unsigned n = 0;

        assert(t);
        assert(caller);

        /* One by one, as session_close: those made in no scope (stateless
         * requests) have none to close by. */
        LIST_FOREACH_SAFE(entries, e, next, t->entries)
                if (streq(e->caller, caller)) {
                        close_start(t, "session_close", e->caller, e->scope, e->id);
                        entry_free(t, e);
                        n++;
                }
        return n;
}
