/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "peer-auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "macro.h"

struct PeerAuth {
        sd_bus_slot *slot;
        peer_auth_done_t done;
        void *userdata;
};

int pid_start_time(pid_t pid, uint64_t *ret) {
        _cleanup_(fclosep) FILE *f = NULL;
        char path[64], buf[1024], *p;
        size_t n;

        (void) snprintf(path, sizeof path, "/proc/%i/stat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return negative_errno();
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        /* comm may contain spaces and parentheses: start after the last ')'. */
        p = strrchr(buf, ')');
        if (!p)
                return -EIO;
        p++;
        /* p is at the space before field 3; field 22 is 19 spaces further. */
        for (unsigned i = 0; i < 19; i++) {
                p = strchr(p + 1, ' ');
                if (!p)
                        return -EIO;
        }
        p++;
        p[strcspn(p, " ")] = 0;
        return parse_uint(p, ret);
}

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        PeerAuth *a = userdata;
        int authorized = 0, challenge = 0, r;

        a->slot = sd_bus_slot_unref(a->slot);
        if (sd_bus_message_is_method_error(m, NULL)) {
                const sd_bus_error *e = sd_bus_message_get_error(m);
                a->done(false, e->message ?: "polkit refused to answer", a->userdata);
                return 0;
        }
        r = sd_bus_message_enter_container(m, 'r', "bba{ss}");
        if (r >= 0)
                r = sd_bus_message_read(m, "bb", &authorized, &challenge);
        if (r < 0) {
                a->done(false, "unexpected reply from polkit", a->userdata);
                return 0;
        }
        a->done(authorized, authorized ? "authorized by polkit"
                            : challenge ? "polkit requires authentication (no agent can ask here)"
                                        : "not authorized by polkit",
                a->userdata);
        return 0;
}

int peer_auth_start(sd_bus *bus, pid_t pid, uid_t uid, peer_auth_done_t done, void *userdata, PeerAuth **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        uint64_t start_time;
        PeerAuth *a;
        int r;

        r = pid_start_time(pid, &start_time);
        if (r < 0)
                return r;

        r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
        if (r < 0)
                return r;
        /* uid must be 'i': as 'u' polkit silently ignores it and falls back
         * to a racy /proc lookup. */
        r = sd_bus_message_append(m, "(sa{sv})s", "unix-process", 3,
                                  "pid", "u", (uint32_t) pid,
                                  "start-time", "t", start_time,
                                  "uid", "i", (int32_t) uid,
                                  PEER_AUTH_ACTION);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "a{ss}us", 0, (uint32_t) 0 /* no interaction */, "");
        if (r < 0)
                return r;

        a = calloc(1, sizeof *a);
        if (!a)
                return -ENOMEM;
        a->done = done;
        a->userdata = userdata;
        r = sd_bus_call_async(bus, &a->slot, m, on_reply, a, 10 * 1000 * 1000);
        if (r < 0) {
                free(a);
                return r;
        }
        *ret = a;
        return 0;
}

PeerAuth *peer_auth_free(PeerAuth *a) {
        if (!a)
                return NULL;
        sd_bus_slot_unref(a->slot);
        free(a);
        return NULL;
}
