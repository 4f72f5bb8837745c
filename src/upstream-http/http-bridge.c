/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The bridge (http-bridge.h): libcurl's multi interface driven by sd-event
 * (curl_multi_socket_action: curl says which sockets and which timeout it
 * wants watched, the loop tells it what happened), the gateway's lines on
 * stdin and stdout. */
#include "http-bridge.h"

#include <assert.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buffer.h"
#include "http-sse.h"
#include "http-util.h"
#include "json-util.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "strv.h"
#include "util.h"

/* The gateway's own caps (tools-internal.h): a line from an upstream is at
 * most MAX_BYTES + 64 KiB (at least 1 MiB); what it sends an upstream and
 * has not been read yet, 8 MiB. */
#define BRIDGE_LINE_SLACK (64U * 1024U)
#define BRIDGE_LINE_MIN (1024U * 1024U)
#define BRIDGE_IN_MAX (8U * 1024U * 1024U + BRIDGE_LINE_SLACK)
/* Messages for the gateway not written yet: past this it does not read. */
#define BRIDGE_OUT_FACTOR 8U
/* Transfers at once (the gateway's calls of all runs on this connection). */
#define BRIDGE_TRANSFERS_MAX 256U
/* Lines that wait for initialize's answer. */
#define BRIDGE_PENDING_MAX 64U
#define BRIDGE_CONNECT_TIMEOUT_S 10L
/* What a POST may take beyond the gateway's CALL_TIMEOUT_S: the gateway
 * cancels first, this is the bridge's own bound. */
#define BRIDGE_TIMEOUT_SLACK_S 5L
#define BRIDGE_DELETE_TIMEOUT_S 5L
#define BRIDGE_JSON_DEPTH 64U
#define BRIDGE_VERSION_MAX 32U
/* JSON-RPC: an internal error, the code a failed transfer's answer has. */
#define JSONRPC_INTERNAL_ERROR (-32603)

typedef struct Transfer Transfer;
typedef struct CurlIo CurlIo;

typedef enum TransferKind {
        TRANSFER_POST,
        TRANSFER_GET,                   /* the server's stream of its own messages */
        TRANSFER_DELETE,                /* the session's end */
} TransferKind;

struct Transfer {
        Bridge *bridge;
        LIST_FIELDS(Transfer, transfers);
        TransferKind kind;
        CURL *easy;
        struct curl_slist *headers;
        json_object *id;                /* a request's id: it must be answered; NULL otherwise */
        bool initialize;                /* the request is initialize */
        bool initialized_note;          /* the notification notifications/initialized */
        bool started;                   /* the first bytes of the body came: status and kind known */
        long status;
        HttpBodyKind body_kind;
        Buffer json;                    /* an application/json body */
        SseParser sse;
        bool answered;                  /* a response with id went to the gateway */
        const char *failure;            /* why a callback stopped the transfer */
        char *session_id;               /* Mcp-Session-Id of initialize's answer */
};

/* One socket curl wants watched. */
struct CurlIo {
        LIST_FIELDS(CurlIo, ios);
        sd_event_source *source;
};

struct Bridge {
        sd_event *event;
        CURLM *multi;
        sd_event_source *curl_timer;
        LIST_HEAD(CurlIo, ios);
        char *url;
        char **headers;                 /* "Name: value" */
        uint64_t max_message, timeout_s;
        int in_fd, out_fd;
        sd_event_source *in_io, *out_io;
        Buffer in, out;
        size_t out_done;
        char *session_id;               /* NULL: none (yet, or the server keeps none) */
        char *version;                  /* the revision initialize agreed on */
        bool initialized;               /* initialize answered: what waited goes */
        char **pending;                 /* lines until then */
        bool get_started, eof;
        LIST_HEAD(Transfer, transfers);
        unsigned n_transfers;
};

static int bridge_start_post(Bridge *b, const char *line, size_t n, json_object *msg);
static void bridge_process(Bridge *b);

/* Something the bridge cannot go on from: the loop ends, the gateway sees
 * EOF and fails this upstream's calls; its next call makes a new instance. */
static void bridge_fatal(Bridge *b, const char *why) {
        log_error("%s; the connection is closed.", why);
        (void) sd_event_exit(b->event, EXIT_FAILURE);
}

/* ---- to the gateway ---- */

static void bridge_update_out(Bridge *b) {
        if (b->out_io)
                (void) sd_event_source_set_enabled(b->out_io, b->out_done < b->out.size ? SD_EVENT_ON : SD_EVENT_OFF);
}

static void bridge_flush(Bridge *b) {
        while (b->out_done < b->out.size) {
                ssize_t n = write(b->out_fd, b->out.data + b->out_done, b->out.size - b->out_done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;          /* EAGAIN: EPOLLOUT; EPIPE: stdin sees the end */
                b->out_done += (size_t) n;
        }
        if (b->out_done == b->out.size)
                b->out.size = b->out_done = 0;
        else if (b->out_done > b->out.size / 2) {
                memmove(b->out.data, b->out.data + b->out_done, b->out.size - b->out_done);
                b->out.size -= b->out_done;
                b->out_done = 0;
        }
        bridge_update_out(b);
}

/* One message to the gateway, on one line (s is changed in place). */
static int bridge_emit(Bridge *b, char *s, size_t n) {
        if (b->eof)
                return 0;
        http_message_one_line(s, n);
        if (buffer_reserve(&b->out, n + 1) < 0) {
                bridge_fatal(b, "The gateway does not read what the server sends");
                return -ENOBUFS;
        }
        (void) buffer_append(&b->out, s, n);
        (void) buffer_append(&b->out, "\n", 1);
        bridge_flush(b);
        return 0;
}

static int bridge_emit_json(Bridge *b, json_object *j) {
        const char *s;
        _cleanup_free_ char *copy = NULL;
        size_t n;

        s = json_serialize(j, &n);
        if (!s || !(copy = strndup(s, n)))
                return -ENOMEM;
        return bridge_emit(b, copy, n);
}

/* The answer a request gets in place of the server's. */
static void bridge_emit_error(Bridge *b, json_object *id, const char *message) {
        _cleanup_json_ json_object *j = NULL, *e = NULL;

        if (json_build(&e, JB_INT("code", JSONRPC_INTERNAL_ERROR), JB_STR("message", message), JB_END) < 0 ||
            json_build(&j, JB_STR("jsonrpc", "2.0"), JB_OBJ("error", TAKE_PTR(e)), JB_END) < 0 ||
            json_add(j, "id", json_object_get(id)) < 0 || bridge_emit_json(b, j) < 0)
                bridge_fatal(b, "Out of memory");
}

/* ---- transfers ---- */

static void transfer_free(Transfer *t) {
        Bridge *b;

        if (!t)
                return;
        b = t->bridge;
        LIST_REMOVE(transfers, b->transfers, t);
        b->n_transfers--;
        if (t->easy) {
                (void) curl_multi_remove_handle(b->multi, t->easy);
                curl_easy_cleanup(t->easy);
        }
        curl_slist_free_all(t->headers);
        json_object_put(t->id);
        buffer_free(&t->json);
        sse_parser_done(&t->sse);
        free(t->session_id);
        free(t);
}

/* A message the server sent on t: noted (did it answer t's request? what
 * revision did initialize agree on?) and handed on as it came. */
static void transfer_note(Transfer *t, json_object *msg) {
        Bridge *b = t->bridge;
        json_object *result;
        const char *v;

        if (!t->id || json_get(msg, "method") || !json_object_equal(json_get(msg, "id"), t->id))
                return;
        t->answered = true;
        result = json_get(msg, "result");
        v = json_get_string(result, "protocolVersion");
        if (t->initialize && v && strlen(v) <= BRIDGE_VERSION_MAX && http_session_id_is_valid(v, strlen(v))) {
                free(b->version);
                b->version = strdup(v);
        }
}

static int transfer_relay(Transfer *t, char *data, size_t n) {
        _cleanup_json_ json_object *msg = NULL;
        const char *perr = NULL;
        size_t end = 0;

        /* What does not parse goes on as it is: the gateway refuses it. */
        if (json_parse_strict(data, n, BRIDGE_JSON_DEPTH, JSON_TOKENER_VALIDATE_UTF8, &msg, &end, &perr) < 0 ||
            !json_object_is_type(msg, json_type_array)) {
                if (msg)
                        transfer_note(t, msg);
                return bridge_emit(t->bridge, data, n);
        }
        /* A batch (2025-03-26): one line per message. */
        for (size_t i = 0; i < json_object_array_length(msg); i++) {
                json_object *m = json_object_array_get_idx(msg, i);
                int r;

                transfer_note(t, m);
                r = bridge_emit_json(t->bridge, m);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int on_sse_event(const char *data, size_t n, void *userdata) {
        Transfer *t = userdata;
        _cleanup_free_ char *copy = NULL;

        if (n == 0)
                return 0;       /* an empty event: priming, keep-alive */
        /* Not strndup(): a NUL inside is the server's garbage, and all n
         * bytes go on (for the gateway to refuse). */
        copy = malloc(n + 1);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, data, n);
        copy[n] = 0;
        return transfer_relay(t, copy, n) < 0 ? -ENOBUFS : 0;
}

/* The status and Content-Type, once the body starts. */
static void transfer_start_body(Transfer *t) {
        char *ct = NULL;

        t->started = true;
        (void) curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->status);
        (void) curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &ct);
        t->body_kind = http_body_kind(ct);
}

static size_t on_curl_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        Transfer *t = userdata;
        size_t n = size * nmemb;
        int r;

        if (!t->started)
                transfer_start_body(t);
        /* An error's body is not read: its status says enough. */
        if (t->status / 100 != 2)
                return 0;
        switch (t->body_kind) {
        case HTTP_BODY_JSON:
                if (buffer_append(&t->json, ptr, n) < 0) {
                        t->failure = "its answer is larger than MAX_BYTES";
                        return 0;
                }
                return n;
        case HTTP_BODY_SSE:
                r = sse_feed(&t->sse, ptr, n, on_sse_event, t);
                if (r == -EMSGSIZE)
                        t->failure = "a message of its event stream is larger than MAX_BYTES";
                else if (r < 0)
                        t->failure = "the gateway does not read its messages";
                return r < 0 ? 0 : n;
        default:
                t->failure = "its answer is neither application/json nor text/event-stream";
                return 0;
        }
}

static size_t on_curl_header(char *ptr, size_t size, size_t nmemb, void *userdata) {
        Transfer *t = userdata;
        size_t n = size * nmemb;
        const char *v;
        size_t l;

        if (!t->initialize || http_header_match(ptr, n, "Mcp-Session-Id", &v, &l) <= 0)
                return n;
        if (!http_session_id_is_valid(v, l)) {
                t->failure = "it gave a session id that is not visible ASCII of at most 256 bytes";
                return 0;
        }
        free(t->session_id);
        t->session_id = strndup(v, l);
        return t->session_id ? n : 0;
}

/* "name: value", or the line name as it is (value NULL). */
static int transfer_add_header(Transfer *t, const char *name, const char *value) {
        _cleanup_free_ char *h = NULL;
        struct curl_slist *l;

        if (asprintf(&h, "%s%s%s", name, value ? ": " : "", value ?: "") < 0)
                return -ENOMEM;
        l = curl_slist_append(t->headers, h);
        if (!l)
                return -ENOMEM;
        t->headers = l;
        return 0;
}

/* The request's headers: the transport's, the session's, the operator's. */
static int transfer_headers(Transfer *t) {
        Bridge *b = t->bridge;
        const char *accept = t->kind == TRANSFER_GET ? "text/event-stream" : "application/json, text/event-stream";
        int r = 0;

        if (t->kind == TRANSFER_POST)
                r = transfer_add_header(t, "Content-Type", "application/json");
        if (r >= 0)
                r = transfer_add_header(t, "Accept", accept);
        /* No "100-continue" round trip before a large body. */
        if (r >= 0)
                r = transfer_add_header(t, "Expect:", NULL);
        if (r >= 0 && b->session_id)
                r = transfer_add_header(t, "Mcp-Session-Id", b->session_id);
        if (r >= 0 && b->version)
                r = transfer_add_header(t, "MCP-Protocol-Version", b->version);
        STRV_FOREACH(h, b->headers)
                if (r >= 0)
                        r = transfer_add_header(t, *h, NULL);
        return r;
}

static int transfer_new(Bridge *b, TransferKind kind, Transfer **ret) {
        Transfer *t;
        CURL *e;
        size_t max = MAX(b->max_message + BRIDGE_LINE_SLACK, (uint64_t) BRIDGE_LINE_MIN);

        if (b->n_transfers >= BRIDGE_TRANSFERS_MAX)
                return -EBUSY;
        t = new0(Transfer, 1);
        if (!t)
                return -ENOMEM;
        t->bridge = b;
        t->kind = kind;
        t->json = BUFFER_INIT(max);
        sse_parser_init(&t->sse, max);
        LIST_PREPEND(transfers, b->transfers, t);
        b->n_transfers++;
        t->easy = e = curl_easy_init();
        if (!e || transfer_headers(t) < 0) {
                transfer_free(t);
                return -ENOMEM;
        }
        /* The operator's URL only: no redirect followed, no proxy from the
         * environment, no other scheme, no compressed answers to inflate. */
        if (curl_easy_setopt(e, CURLOPT_URL, b->url) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, MIN(BRIDGE_CONNECT_TIMEOUT_S, (long) b->timeout_s)) !=
                    CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_curl_write) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_WRITEDATA, t) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_curl_header) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_HEADERDATA, t) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_PRIVATE, t) != CURLE_OK) {
                transfer_free(t);
                return -EINVAL;
        }
        *ret = t;
        return 0;
}

static int transfer_go(Transfer *t) {
        if (curl_multi_add_handle(t->bridge->multi, t->easy) != CURLM_OK) {
                transfer_free(t);
                return -EIO;
        }
        return 0;
}

static Transfer *find_request(Bridge *b, json_object *id) {
        LIST_FOREACH(transfers, t, b->transfers)
                if (t->id && json_object_equal(t->id, id))
                        return t;
        return NULL;
}

/* ---- what the gateway sends ---- */

static int bridge_start_get(Bridge *b) {
        Transfer *t;
        int r;

        b->get_started = true;
        r = transfer_new(b, TRANSFER_GET, &t);
        if (r < 0)
                return r;
        if (curl_easy_setopt(t->easy, CURLOPT_HTTPGET, 1L) != CURLE_OK) {
                transfer_free(t);
                return -EINVAL;
        }
        return transfer_go(t);
}

static int bridge_start_delete(Bridge *b) {
        Transfer *t;
        int r;

        r = transfer_new(b, TRANSFER_DELETE, &t);
        if (r < 0)
                return r;
        if (curl_easy_setopt(t->easy, CURLOPT_CUSTOMREQUEST, "DELETE") != CURLE_OK ||
            curl_easy_setopt(t->easy, CURLOPT_TIMEOUT, BRIDGE_DELETE_TIMEOUT_S) != CURLE_OK) {
                transfer_free(t);
                return -EINVAL;
        }
        return transfer_go(t);
}

/* notifications/cancelled: the request's transfer stops here too (its
 * answer, if it comes, is the gateway's to drop anyway). */
static void bridge_cancel(Bridge *b, json_object *msg) {
        json_object *id = json_get(json_get(msg, "params"), "requestId");
        Transfer *t = id ? find_request(b, id) : NULL;

        if (t && !t->initialize)
                transfer_free(t);
}

static int bridge_start_post(Bridge *b, const char *line, size_t n, json_object *msg) {
        const char *method = json_get_string(msg, "method");
        json_object *id = json_get(msg, "id");
        Transfer *t;
        int r;

        r = transfer_new(b, TRANSFER_POST, &t);
        if (r >= 0 && (curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) n) != CURLE_OK ||
                       curl_easy_setopt(t->easy, CURLOPT_COPYPOSTFIELDS, line) != CURLE_OK ||
                       curl_easy_setopt(t->easy, CURLOPT_TIMEOUT, (long) b->timeout_s + BRIDGE_TIMEOUT_SLACK_S) !=
                               CURLE_OK)) {
                transfer_free(t);
                r = -EINVAL;
        }
        if (r < 0) {
                if (method && id)
                        bridge_emit_error(b, id, r == -EBUSY ? "too many requests to the server at once"
                                                             : "cannot make the HTTP request");
                return 0;
        }
        if (method && id)
                t->id = json_object_get(id);
        t->initialize = streq_ptr(method, "initialize");
        t->initialized_note = streq_ptr(method, "notifications/initialized");
        if (transfer_go(t) < 0 && method && id)
                bridge_emit_error(b, id, "cannot make the HTTP request");
        return 0;
}

/* One line of the gateway's. Until initialize is answered only initialize
 * goes: the rest needs its session id. */
static int bridge_take_line(Bridge *b, char *line, size_t n) {
        _cleanup_json_ json_object *msg = NULL;
        const char *perr = NULL, *method;
        size_t end = 0;

        if (strspn(line, " \t\r") == n)
                return 0;
        if (json_parse_strict(line, n, BRIDGE_JSON_DEPTH, JSON_TOKENER_VALIDATE_UTF8, &msg, &end, &perr) < 0 ||
            !json_object_is_type(msg, json_type_object)) {
                bridge_fatal(b, "The gateway sent a line that is not one JSON object");
                return -EBADMSG;
        }
        method = json_get_string(msg, "method");
        if (!b->initialized && !streq_ptr(method, "initialize")) {
                if (strv_length(b->pending) >= BRIDGE_PENDING_MAX) {
                        bridge_fatal(b, "The gateway sent too much before initialize was answered");
                        return -ENOBUFS;
                }
                if (strv_extend_n(&b->pending, line, n) < 0) {
                        bridge_fatal(b, "Out of memory");
                        return -ENOMEM;
                }
                return 0;
        }
        if (streq_ptr(method, "notifications/cancelled"))
                bridge_cancel(b, msg);
        return bridge_start_post(b, line, n, msg);
}

/* The session is there: what waited goes, in order. */
static void bridge_initialized(Bridge *b, Transfer *t) {
        _cleanup_strv_free_ char **pending = TAKE_PTR(b->pending);

        free(b->session_id);
        b->session_id = TAKE_PTR(t->session_id);
        b->initialized = true;
        log_debug("Initialized, revision %s, %s.", b->version ?: "(none)",
                  b->session_id ? "with a session id" : "without a session id");
        STRV_FOREACH(l, pending)
                if (bridge_take_line(b, *l, strlen(*l)) < 0)
                        return;
}

/* ---- a transfer's end ---- */

static const char *transfer_failure(Transfer *t, CURLcode code, char *buf, size_t size) {
        if (t->failure)
                return t->failure;
        if (t->status != 0 && t->status / 100 != 2) {
                (void) snprintf(buf, size, "it answered HTTP %ld", t->status);
                return buf;
        }
        if (code != CURLE_OK) {
                (void) snprintf(buf, size, "HTTP request failed: %s", curl_easy_strerror(code));
                return buf;
        }
        return NULL;
}

static void transfer_done(Transfer *t, CURLcode code) {
        Bridge *b = t->bridge;
        char text[256];
        const char *why;

        (void) curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->status);
        why = transfer_failure(t, code, text, sizeof text);
        if (!why && t->kind == TRANSFER_POST && t->body_kind == HTTP_BODY_JSON && t->json.size > 0 &&
            transfer_relay(t, t->json.data, t->json.size) < 0)
                return;
        if (t->id && !t->answered)
                bridge_emit_error(b, t->id, why ?: "its answer held no response to the request");
        if (why && t->kind != TRANSFER_GET)
                log_warning("%s %s: %s.", t->kind == TRANSFER_DELETE ? "DELETE" : "POST",
                            t->initialize ? "of initialize" : t->id ? "of a request" : "of a notification", why);
        if (t->initialize && t->answered && !why)
                bridge_initialized(b, t);
        else if (t->initialized_note && !why && !b->get_started && bridge_start_get(b) < 0)
                log_warning("Cannot open the server's GET stream; its notifications are not heard.");
        /* The server forgot the session: every later request would fail. */
        if (t->status == 404 && b->session_id && t->kind == TRANSFER_POST)
                bridge_fatal(b, "The server no longer knows the session");
        if (t->kind == TRANSFER_GET)
                log_debug("The server's GET stream ended (%s).", why ?: "closed");
        if (t->kind == TRANSFER_DELETE && b->eof)
                (void) sd_event_exit(b->event, 0);
        transfer_free(t);
}

static void bridge_check_done(Bridge *b) {
        CURLMsg *m;
        int left;

        while ((m = curl_multi_info_read(b->multi, &left))) {
                Transfer *t = NULL;

                if (m->msg != CURLMSG_DONE)
                        continue;
                (void) curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **) &t);
                if (t)
                        transfer_done(t, m->data.result);
        }
}

/* ---- curl on sd-event ---- */

static int on_curl_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Bridge *b = userdata;
        int action = 0, running;

        if (revents & (EPOLLIN | EPOLLHUP))
                action |= CURL_CSELECT_IN;
        if (revents & EPOLLOUT)
                action |= CURL_CSELECT_OUT;
        if (revents & EPOLLERR)
                action |= CURL_CSELECT_ERR;
        if (curl_multi_socket_action(b->multi, fd, action, &running) != CURLM_OK)
                bridge_fatal(b, "libcurl failed");
        bridge_check_done(b);
        return 0;
}

static void curl_io_free(Bridge *b, CurlIo *io) {
        LIST_REMOVE(ios, b->ios, io);
        sd_event_source_disable_unref(io->source);
        free(io);
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
        Bridge *b = userp;
        CurlIo *io = socketp;
        uint32_t events;

        if (what == CURL_POLL_REMOVE) {
                /* curl forgets the socket (and its pointer) itself. */
                if (io)
                        curl_io_free(b, io);
                return 0;
        }
        events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
        if (io) {
                if (sd_event_source_set_io_events(io->source, events) < 0 ||
                    sd_event_source_set_enabled(io->source, SD_EVENT_ON) < 0)
                        return -1;
                return 0;
        }
        io = new0(CurlIo, 1);
        if (!io)
                return -1;
        if (sd_event_add_io(b->event, &io->source, fd, events, on_curl_io, b) < 0) {
                free(io);
                return -1;
        }
        LIST_PREPEND(ios, b->ios, io);
        if (curl_multi_assign(b->multi, fd, io) != CURLM_OK) {
                curl_io_free(b, io);
                return -1;
        }
        return 0;
}

static int on_curl_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Bridge *b = userdata;
        int running;

        if (curl_multi_socket_action(b->multi, CURL_SOCKET_TIMEOUT, 0, &running) != CURLM_OK)
                bridge_fatal(b, "libcurl failed");
        bridge_check_done(b);
        return 0;
}

static int on_curl_timeout(CURLM *multi, long timeout_ms, void *userp) {
        Bridge *b = userp;
        uint64_t usec;

        if (timeout_ms < 0)
                return b->curl_timer && sd_event_source_set_enabled(b->curl_timer, SD_EVENT_OFF) < 0 ? -1 : 0;
        /* 0: at once, from the loop (never from within this callback). */
        usec = (uint64_t) timeout_ms * USEC_PER_MSEC;
        if (!b->curl_timer)
                /* Accuracy 1 µs: sd-event's default (0) lets a timer fire up
                 * to 250 ms late, which curl's short timeouts cannot bear. */
                return sd_event_add_time_relative(b->event, &b->curl_timer, CLOCK_MONOTONIC, usec, 1, on_curl_timer,
                                                  b) < 0 ? -1 : 0;
        if (sd_event_source_set_time_relative(b->curl_timer, usec) < 0 ||
            sd_event_source_set_enabled(b->curl_timer, SD_EVENT_ONESHOT) < 0)
                return -1;
        return 0;
}

/* ---- the gateway's connection ---- */

/* The gateway hung up: every transfer stops, the session ends (DELETE, if
 * the server gave one), then the bridge does. */
static void bridge_eof(Bridge *b) {
        b->eof = true;
        b->in_io = sd_event_source_disable_unref(b->in_io);
        b->out_io = sd_event_source_disable_unref(b->out_io);
        while (b->transfers)
                transfer_free(b->transfers);
        if (!b->session_id || bridge_start_delete(b) < 0)
                (void) sd_event_exit(b->event, 0);
}

static void bridge_process(Bridge *b) {
        size_t off = 0;

        for (;;) {
                char *nl = memchr(b->in.data + off, '\n', b->in.size - off);
                size_t n;

                if (!nl)
                        break;
                n = (size_t) (nl - (b->in.data + off));
                *nl = 0;
                if (bridge_take_line(b, b->in.data + off, n) < 0)
                        return;
                off += n + 1;
        }
        memmove(b->in.data, b->in.data + off, b->in.size - off);
        b->in.size -= off;
        if (b->in.size >= b->in.limit)
                bridge_fatal(b, "The gateway sent a line over the limit");
}

static int on_in(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Bridge *b = userdata;
        ssize_t n;

        if (buffer_reserve(&b->in, 64 * 1024) < 0 && buffer_reserve(&b->in, 1) < 0) {
                bridge_fatal(b, "The gateway sent a line over the limit");
                return 0;
        }
        n = read(fd, b->in.data + b->in.size, MIN(b->in.allocated - b->in.size, (size_t) 64 * 1024));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                bridge_eof(b);
                return 0;
        }
        b->in.size += (size_t) n;
        bridge_process(b);
        return 0;
}

static int on_out(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        bridge_flush(userdata);
        return 0;
}

static int bridge_setup(Bridge *b) {
        int r;

        r = fd_nonblock(b->in_fd, true);
        if (r >= 0)
                r = fd_nonblock(b->out_fd, true);
        if (r < 0)
                return r;
        b->multi = curl_multi_init();
        if (!b->multi)
                return -ENOMEM;
        if (curl_multi_setopt(b->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket) != CURLM_OK ||
            curl_multi_setopt(b->multi, CURLMOPT_SOCKETDATA, b) != CURLM_OK ||
            curl_multi_setopt(b->multi, CURLMOPT_TIMERFUNCTION, on_curl_timeout) != CURLM_OK ||
            curl_multi_setopt(b->multi, CURLMOPT_TIMERDATA, b) != CURLM_OK)
                return -EINVAL;
        if (sd_event_add_io(b->event, &b->in_io, b->in_fd, EPOLLIN, on_in, b) < 0 ||
            sd_event_add_io(b->event, &b->out_io, b->out_fd, EPOLLOUT, on_out, b) < 0)
                return -ENOMEM;
        bridge_update_out(b);
        return 0;
}

int bridge_new(sd_event *e, const BridgeOptions *o, Bridge **ret) {
        Bridge *b;
        int r;

        assert(e);
        assert(o);
        assert(o->url);
        assert(ret);

        b = new0(Bridge, 1);
        if (!b) {
                safe_close(o->in_fd);
                if (o->out_fd != o->in_fd)
                        safe_close(o->out_fd);
                return -ENOMEM;
        }
        b->event = sd_event_ref(e);
        b->in_fd = o->in_fd;
        b->out_fd = o->out_fd;
        b->max_message = o->max_message;
        b->timeout_s = MAX(o->timeout_s, (uint64_t) 1);
        b->in = BUFFER_INIT(BRIDGE_IN_MAX);
        b->out = BUFFER_INIT(BRIDGE_OUT_FACTOR * MAX(o->max_message + BRIDGE_LINE_SLACK, (uint64_t) BRIDGE_LINE_MIN));
        b->url = strdup(o->url);
        if (!b->url || (o->headers && !(b->headers = strv_copy((const char *const *) o->headers)))) {
                bridge_free(b);
                return -ENOMEM;
        }
        r = bridge_setup(b);
        if (r < 0) {
                bridge_free(b);
                return r;
        }
        *ret = b;
        return 0;
}

Bridge *bridge_free(Bridge *b) {
        if (!b)
                return NULL;
        while (b->transfers)
                transfer_free(b->transfers);
        if (b->multi)
                (void) curl_multi_cleanup(b->multi);
        while (b->ios)
                curl_io_free(b, b->ios);
        sd_event_source_disable_unref(b->curl_timer);
        sd_event_source_disable_unref(b->in_io);
        sd_event_source_disable_unref(b->out_io);
        safe_close(b->in_fd);
        if (b->out_fd != b->in_fd)
                safe_close(b->out_fd);
        buffer_free(&b->in);
        buffer_free(&b->out);
        /* The headers hold credentials: gone with the bridge. */
        strv_free(b->headers);
        strv_free(b->pending);
        free(b->url);
        free(b->session_id);
        free(b->version);
        sd_event_unref(b->event);
        free(b);
        return NULL;
}
