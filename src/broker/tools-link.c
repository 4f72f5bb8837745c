/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tools-link.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "dirent-util.h"
#include "json-util.h"
#include "server-config.h"
#include "log.h"
#include "packet.h"
#include "util.h"

/* What the gateway may report at a run's end: counts per server, as many
 * servers as one run could have used, each name as servers.d allows. The
 * gateway runs as a dynamic user and talks to upstreams: what it says is
 * checked here before it reaches a result. */
#define TOOLS_COUNTS_SERVERS_MAX SERVERS_MAX

struct ToolsLink {
        sd_event *event;
        int fd;                 /* the control connection */
        int run_fd;             /* the run's end of the pair, until taken */
        sd_event_source *io, *timer, *end_timer, *query_timer;
        char run_id[33];
        bool settled, accepted, ended;
        json_object *counts;
        /* A session's questions for the counts so far ("counts", by id): the
         * last asked, the one awaited (0: none) and the last answered. */
        uint64_t last_query, pending_query, answered_query;
        bool query_answered;
        json_object *seen;      /* the gateway's last counts: what the next answer is counted from */
        json_object *since;     /* the awaited answer, counted from the one before */
        tools_link_counted_t on_counted;
        void *counted_userdata;
        ToolStats *totals;
        tools_link_ready_t on_ready;
        void *userdata;
        tools_link_ended_t on_ended;
        void *ended_userdata;
        /* Code mode's questions to the run's client: open ones by id. */
        tools_link_confirm_t on_confirm;
        void *confirm_userdata;
        uint64_t confirm_open[BROKER_CONFIRM_PENDING_MAX];
        unsigned n_confirm_open;
        char message[256];
};

bool tools_configured(const char *dir) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;

        assert(dir);

        d = opendir(dir);
        if (!d)
                return false;
        while ((de = readdir(d))) {
                size_t n = strlen(de->d_name);

                if (de->d_name[0] != '.' && n > 5 && streq(de->d_name + n - 5, ".conf") &&
                    (de->d_type == DT_REG || de->d_type == DT_UNKNOWN))
                        return true;
        }
        return false;
}

static void link_settle(ToolsLink *l, int error, const char *message) {
        assert(l);

        if (l->settled)
                return;
        l->settled = true;
        l->accepted = error == 0;
        if (!l->accepted)
                l->run_fd = safe_close(l->run_fd);
        l->timer = sd_event_source_disable_unref(l->timer);
        if (l->on_ready)
                l->on_ready(l, error, message, l->userdata);
}

static void link_close(ToolsLink *l) {
        assert(l);

        l->io = sd_event_source_disable_unref(l->io);
        l->fd = safe_close(l->fd);
        if (l->end_timer)
                (void) sd_event_source_set_time_relative(l->end_timer, 0);
        if (l->query_timer)
                (void) sd_event_source_set_time_relative(l->query_timer, 0);
}

/* The counts as the result may carry them: known fields, non-negative
 * integers, valid names, bounded; anything else is dropped and logged. */
static json_object *counts_checked(const ToolsLink *l, json_object *servers) {
        _cleanup_json_ json_object *out = json_object_new_object();
        static const char *const fields[] = { "calls", "errors", "refused", "ms" };
        unsigned n = 0;

        if (!out || !json_object_is_type(servers, json_type_object))
                return NULL;
        json_object_object_foreach(servers, name, v) {
                _cleanup_json_ json_object *one = json_object_new_object();

                if (!one)
                        return NULL;
                if (++n > TOOLS_COUNTS_SERVERS_MAX || !server_name_is_valid(name) ||
                    !json_object_is_type(v, json_type_object)) {
                        log_warning("mcp-exec-toolsd reported malformed counts for run %s; dropped.", l->run_id);
                        return NULL;
                }
                for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                        int64_t x = json_get_int64(v, fields[i], 0);
                        if (json_add_int(one, fields[i], MAX(x, (int64_t) 0)) < 0)
                                return NULL;
                }
                if (json_add(out, name, TAKE_PTR(one)) < 0)
                        return NULL;
        }
        return TAKE_PTR(out);
}

static const char *const count_fields[] = { "calls", "errors", "refused", "ms" };

/* What now (checked counts) has more than before, per server: counts only
 * grow. A server with nothing new is left out. */
static json_object *counts_since(json_object *now, json_object *before) {
        _cleanup_json_ json_object *out = json_object_new_object();

        if (!out)
                return NULL;
        json_object_object_foreach(now, name, v) {
                _cleanup_json_ json_object *one = json_object_new_object();
                json_object *b = json_get(before, name);
                bool any = false;

                if (!one)
                        return NULL;
                for (size_t i = 0; i < ELEMENTSOF(count_fields); i++) {
                        int64_t d = json_get_int64(v, count_fields[i], 0) - json_get_int64(b, count_fields[i], 0);

                        any = any || d > 0;
                        if (json_add_int(one, count_fields[i], MAX(d, (int64_t) 0)) < 0)
                                return NULL;
                }
                if (any && json_add(out, name, TAKE_PTR(one)) < 0)
                        return NULL;
        }
        return TAKE_PTR(out);
}

/* The gateway's counts (checked) are the new mark; what they add to the
 * last is added to the totals and returned (a new reference). */
static json_object *note_counts(ToolsLink *l, json_object *checked) {
        json_object *since;

        assert(checked);

        since = counts_since(checked, l->seen);
        if (!since)
                return NULL;
        json_object_put(l->seen);
        l->seen = json_object_get(checked);
        if (!l->totals)
                return since;
        json_object_object_foreach(since, name, v) {
                ToolServerStats add = {
                        .calls = (uint64_t) json_get_int64(v, "calls", 0),
                        .errors = (uint64_t) json_get_int64(v, "errors", 0),
                        .refused = (uint64_t) json_get_int64(v, "refused", 0),
                        .ms = (uint64_t) json_get_int64(v, "ms", 0),
                };
                if (tool_stats_add(l->totals, name, &add) < 0)
                        log_warning("The tool calls of server %s are not kept for /metrics: more than %d servers.",
                                    name, TOOL_STATS_SERVERS_MAX);
        }
        return since;
}

/* The answer to "counts" (with the id asked) or to "end" (without). */
static int read_counts(ToolsLink *l, json_object *msg) {
        _cleanup_json_ json_object *checked = NULL;
        json_object *id = json_get(msg, "id");
        int64_t n;

        if (!id) {
                if (!l->end_timer)
                        return -EBADMSG;
                l->counts = counts_checked(l, json_get(msg, "servers"));
                if (l->counts)
                        json_object_put(note_counts(l, l->counts));
                l->ended = true;
                return -ECONNRESET;
        }
        n = json_object_is_type(id, json_type_int) ? json_object_get_int64(id) : -1;
        if (n <= 0 || (uint64_t) n > l->last_query || (uint64_t) n <= l->answered_query) {
                log_warning("mcp-exec-toolsd answered a question for run %s that was not asked; ignored.", l->run_id);
                return 1;
        }
        l->answered_query = (uint64_t) n;
        checked = counts_checked(l, json_get(msg, "servers"));
        if ((uint64_t) n != l->pending_query) {
                /* A late answer: the mark moves all the same. */
                if (checked)
                        json_object_put(note_counts(l, checked));
                return 1;
        }
        l->since = checked ? note_counts(l, checked) : NULL;
        l->query_answered = true;
        (void) sd_event_source_set_time_relative(l->query_timer, 0);
        return 1;
}

static int send_confirmed(ToolsLink *l, const BrokerConfirmAnswer *a) {
        _cleanup_json_ json_object *j = NULL;
        int r;

        r = broker_confirm_answer_build("op", "confirmed", a, &j);
        if (r >= 0)
                r = packet_send(l->fd, j, NULL, 0);
        if (r < 0)
                log_warning_errno(r, "Cannot answer mcp-exec-toolsd's question for run %s: %m", l->run_id);
        return r;
}

/* The gateway asks to confirm a destructive tool: to the run's client if
 * it can answer, else no at once. 1, or -EBADMSG for a malformed question. */
static int read_confirm(ToolsLink *l, json_object *msg) {
        BrokerConfirmAsk a;
        BrokerConfirmAnswer no = {};

        if (broker_confirm_ask_parse(msg, &a) < 0)
                return -EBADMSG;
        no.id = a.id;
        for (unsigned i = 0; i < l->n_confirm_open; i++)
                if (l->confirm_open[i] == a.id)
                        return -EBADMSG;        /* asked twice: not the gateway's protocol */
        if (!l->on_confirm)
                strcpy(no.reason, "nobody can be asked for this run (only an MCP client that declared "
                                  "elicitation can confirm)");
        else if (l->n_confirm_open >= BROKER_CONFIRM_PENDING_MAX)
                strcpy(no.reason, "too many questions of this run are open");
        if (no.reason[0]) {
                (void) send_confirmed(l, &no);
                return 1;
        }
        l->confirm_open[l->n_confirm_open++] = a.id;
        l->on_confirm(l, &a, l->confirm_userdata);
        return 1;
}

void tools_link_on_confirm(ToolsLink *l, tools_link_confirm_t ask, void *userdata) {
        assert(l);

        l->on_confirm = ask;
        l->confirm_userdata = userdata;
}

int tools_link_confirm_answer(ToolsLink *l, const BrokerConfirmAnswer *a) {
        assert(l);
        assert(a);

        for (unsigned i = 0; i < l->n_confirm_open; i++)
                if (l->confirm_open[i] == a->id) {
                        l->confirm_open[i] = l->confirm_open[--l->n_confirm_open];
                        if (l->fd < 0)
                                return 0;
                        (void) send_confirmed(l, a);
                        return 0;
                }
        return -ENOENT;
}

void tools_link_confirm_close_all(ToolsLink *l, const char *reason) {
        assert(l);

        while (l->n_confirm_open > 0) {
                BrokerConfirmAnswer no = { .id = l->confirm_open[0] };

                str_printable(reason, no.reason, sizeof no.reason);
                (void) tools_link_confirm_answer(l, &no);
        }
}

/* 1: one packet handled; < 0: the link is over (link_close()). */
static int read_one(ToolsLink *l) {
        _cleanup_json_ json_object *msg = NULL;
        int fds[1] = { -EBADF };
        size_t n_fds = 0;
        int r;

        r = packet_recv(l->fd, &msg, fds, 1, &n_fds);
        if (r == -EAGAIN)
                return 0;
        for (size_t i = 0; i < n_fds; i++)
                safe_close(fds[i]);
        if (r <= 0) {
                link_settle(l, r == 0 ? -ECONNRESET : r,
                            r == 0 ? "mcp-exec-toolsd closed the connection"
                                   : "mcp-exec-toolsd sent a malformed packet");
                return r == 0 ? -ECONNRESET : r;
        }
        if (!l->settled && n_fds == 0 && json_object_is_type(json_get(msg, "ok"), json_type_boolean)) {
                if (json_get_bool(msg, "ok")) {
                        link_settle(l, 0, NULL);
                        return 1;
                }
                char echo[200];
                str_printable(json_get_string(msg, "error") ?: "no reason given", echo, sizeof echo);
                (void) snprintf(l->message, sizeof l->message, "mcp-exec-toolsd refused the run: %s", echo);
                link_settle(l, -EPERM, l->message);
                return -EPERM;
        }
        if (l->accepted && streq_ptr(json_get_string(msg, "op"), "counts")) {
                r = read_counts(l, msg);
                if (r != -EBADMSG)
                        return r;
        }
        if (l->accepted && streq_ptr(json_get_string(msg, "op"), "confirm")) {
                r = read_confirm(l, msg);
                if (r != -EBADMSG)
                        return r;
        }
        log_warning("mcp-exec-toolsd sent an unexpected packet for run %s; closing its control connection.",
                    l->run_id);
        link_settle(l, -EBADMSG, "mcp-exec-toolsd broke its protocol");
        return -EBADMSG;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ToolsLink *l = userdata;

        /* The gateway says little per run: one answer, then the counts. */
        for (unsigned i = 0; l->fd >= 0 && i < 4; i++) {
                int r = read_one(l);
                if (r < 0)
                        link_close(l);
                if (r <= 0)
                        break;
        }
        return 0;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        ToolsLink *l = userdata;

        link_close(l);
        link_settle(l, -ETIMEDOUT, "mcp-exec-toolsd did not take the run in time");
        return 0;
}

int tools_link_start(sd_event *e, const char *socket_path, const char *run_id, const char *caller,
                     uint64_t timeout_usec, tools_link_ready_t ready, void *userdata, ToolsLink **ret) {
        _cleanup_(tools_link_freep) ToolsLink *l = NULL;
        _cleanup_json_ json_object *msg = NULL;
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        int r;

        assert(e);
        assert(socket_path);
        assert(caller);
        assert(ret);

        if (!run_id || strlen(run_id) != 32)
                return -EINVAL;
        l = new0(ToolsLink, 1);
        if (!l)
                return -ENOMEM;
        l->event = sd_event_ref(e);
        l->fd = l->run_fd = -EBADF;
        l->on_ready = ready;
        l->userdata = userdata;
        memcpy(l->run_id, run_id, 33);

        /* A stream: the run's frames are length-prefixed and may be larger
         * than a datagram; non-blocking on the gateway's side only. */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                return -errno;
        l->fd = packet_connect(socket_path);
        if (l->fd < 0)
                return l->fd;
        r = json_build(&msg, JB_STR("op", "run"), JB_STR("run", run_id), JB_STR("caller", caller), JB_END);
        if (r < 0)
                return r;
        r = packet_send(l->fd, msg, &sp[1], 1);
        if (r < 0)
                return r;
        sp[1] = safe_close(sp[1]);
        l->run_fd = TAKE_FD(sp[0]);
        r = sd_event_add_io(e, &l->io, l->fd, EPOLLIN, on_io, l);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(e, &l->timer, CLOCK_MONOTONIC, timeout_usec, 0, on_timeout, l);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

bool tools_link_is_settled(const ToolsLink *l) {
        return l && l->settled;
}

int tools_link_take_run_fd(ToolsLink *l) {
        assert(l);

        return l->accepted && l->run_fd >= 0 ? TAKE_FD(l->run_fd) : -EBADF;
}

json_object *tools_link_counts(const ToolsLink *l) {
        return l && l->counts ? json_object_get(l->counts) : NULL;
}

static int on_end_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ToolsLink *l = userdata;

        if (!l->ended)
                log_warning("mcp-exec-toolsd sent no counts for run %s (gone, or not in time).", l->run_id);
        l->end_timer = sd_event_source_disable_unref(l->end_timer);
        link_close(l);
        /* Last: done may free l. */
        l->on_ended(l, l->ended_userdata);
        return 0;
}

int tools_link_end(ToolsLink *l, uint64_t timeout_usec, tools_link_ended_t done, void *userdata) {
        _cleanup_json_ json_object *msg = NULL;
        int r;

        assert(l);
        assert(done);

        if (!l->accepted || l->fd < 0 || l->end_timer)
                return 0;
        r = json_build(&msg, JB_STR("op", "end"), JB_END);
        if (r >= 0)
                r = packet_send(l->fd, msg, NULL, 0);
        if (r >= 0)
                r = sd_event_add_time_relative(l->event, &l->end_timer, CLOCK_MONOTONIC, timeout_usec, 0,
                                               on_end_timer, l);
        if (r < 0) {
                log_warning_errno(r, "Cannot ask mcp-exec-toolsd for the counts of run %s: %m", l->run_id);
                return 0;
        }
        l->on_ended = done;
        l->ended_userdata = userdata;
        return 1;
}

void tools_link_count_into(ToolsLink *l, ToolStats *totals) {
        assert(l);

        l->totals = totals;
}

static int on_query_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ToolsLink *l = userdata;
        _cleanup_json_ json_object *since = TAKE_PTR(l->since);
        tools_link_counted_t done = l->on_counted;

        if (!l->query_answered)
                log_warning("mcp-exec-toolsd sent no counts for run %s in time; the call's result goes without.",
                            l->run_id);
        l->query_timer = sd_event_source_disable_unref(l->query_timer);
        l->pending_query = 0;
        l->query_answered = false;
        l->on_counted = NULL;
        done(l, since, l->counted_userdata);
        return 0;
}

int tools_link_query(ToolsLink *l, uint64_t timeout_usec, tools_link_counted_t done, void *userdata) {
        _cleanup_json_ json_object *msg = NULL;
        uint64_t id;
        int r;

        assert(l);
        assert(done);

        if (l->query_timer)
                return -EBUSY;
        if (!l->accepted || l->fd < 0 || l->end_timer)
                return 0;
        id = l->last_query + 1;
        r = json_build(&msg, JB_STR("op", "counts"), JB_INT("id", (int64_t) id), JB_END);
        if (r >= 0)
                r = packet_send(l->fd, msg, NULL, 0);
        if (r >= 0)
                r = sd_event_add_time_relative(l->event, &l->query_timer, CLOCK_MONOTONIC, timeout_usec, 0,
                                               on_query_timer, l);
        if (r < 0) {
                log_warning_errno(r, "Cannot ask mcp-exec-toolsd for the counts of run %s: %m", l->run_id);
                return 0;
        }
        l->last_query = l->pending_query = id;
        l->on_counted = done;
        l->counted_userdata = userdata;
        return 1;
}

ToolsLink *tools_link_free(ToolsLink *l) {
        if (!l)
                return NULL;
        sd_event_source_disable_unref(l->io);
        sd_event_source_disable_unref(l->timer);
        sd_event_source_disable_unref(l->end_timer);
        sd_event_source_disable_unref(l->query_timer);
        safe_close(l->fd);
        safe_close(l->run_fd);
        json_object_put(l->counts);
        json_object_put(l->seen);
        json_object_put(l->since);
        sd_event_unref(l->event);
        free(l);
        return NULL;
}
