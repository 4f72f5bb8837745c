/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "daemon-util.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "socket-util.h"
#include "util.h"

int event_new_daemon(sd_event **ret) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        sigset_t mask;
        int r;

        assert(ret);

        r = sd_event_default(&e);
        if (r < 0)
                return r;
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGINT);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
        /* No handler: sd-event exits the loop. */
        (void) sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL);
        (void) sd_event_add_signal(e, NULL, SIGINT, NULL, NULL);
        (void) sd_event_set_watchdog(e, true);
        *ret = TAKE_PTR(e);
        return 0;
}

static int listen_own_socket(const char *path, int backlog) {
        union sockaddr_union sa;
        _cleanup_close_ int fd = -EBADF;
        int salen;

        assert(path);

        salen = sockaddr_un_set_path(&sa.un, path);
        if (salen < 0)
                return salen;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return negative_errno();
        (void) unlink(path);
        if (bind(fd, &sa.sa, (socklen_t) salen) < 0 || chmod(path, 0600) < 0 || listen(fd, backlog) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

int daemon_listen_unix(const char *path, int backlog, int *ret_fd) {
        int fd, n, r;

        assert(path);
        assert(ret_fd);

        n = sd_listen_fds(true);
        if (n > 1)
                return log_error_errno(EINVAL, "Expected one listening socket, got %d.", n);
        if (n == 1) {
                r = fd_nonblock(SD_LISTEN_FDS_START, true);
                if (r < 0)
                        return log_error_errno(r, "Failed to make the listening socket non-blocking: %m");
                *ret_fd = SD_LISTEN_FDS_START;
                return 1;
        }
        fd = listen_own_socket(path, backlog);
        if (fd < 0)
                return log_error_errno(fd, "Failed to listen on %s: %m", path);
        *ret_fd = fd;
        return 0;
}

void daemon_idle_update(sd_event *e, sd_event_source **timer, uint64_t usec, bool busy,
                        sd_event_time_handler_t callback, void *userdata) {
        assert(e);
        assert(timer);
        assert(callback);

        if (busy) {
                (void) sd_event_source_set_enabled(*timer, SD_EVENT_OFF);
                return;
        }
        if (!*timer) {
                if (sd_event_add_time_relative(e, timer, CLOCK_MONOTONIC, usec, 0, callback, userdata) < 0)
                        log_warning("Failed to arm the idle timer, ignoring.");
                return;
        }
        (void) sd_event_source_set_time_relative(*timer, usec);
        (void) sd_event_source_set_enabled(*timer, SD_EVENT_ONESHOT);
}

int daemon_exit_idle(sd_event *e) {
        assert(e);

        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(e, 0);
}

int daemon_accept(int listen_fd, int *ret_fd, pid_t *ret_pid, uid_t *ret_uid) {
        _cleanup_close_ int fd = -EBADF;
        pid_t pid;
        uid_t uid;
        int r;

        assert(listen_fd >= 0);
        assert(ret_fd);
        assert(ret_pid);
        assert(ret_uid);

        fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                return log_warning_errno(errno, "accept failed: %m");
        }
        r = getpeercred_fd(fd, &pid, &uid, NULL);
        if (r < 0)
                return log_warning_errno(r, "Failed to read peer credentials, refusing: %m");
        *ret_fd = TAKE_FD(fd);
        *ret_pid = pid;
        *ret_uid = uid;
        return 1;
}

void daemon_refuse_queued(void) {
        int n = sd_listen_fds(false);

        for (int fd = SD_LISTEN_FDS_START; n > 0 && fd < SD_LISTEN_FDS_START + n; fd++) {
                if (sd_is_socket(fd, AF_UNSPEC, 0, 1) <= 0 || fd_nonblock(fd, true) < 0)
                        continue;
                for (unsigned i = 0; i < 4096; i++) {
                        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

                        if (c < 0 && errno == EINTR)
                                continue;
                        if (c < 0)
                                break;
                        (void) safe_close(c);
                }
        }
}

int daemon_accept_root(int listen_fd, uid_t also_uid, daemon_refuse_t refuse, void *userdata, int *ret_fd,
                       pid_t *ret_pid, uid_t *ret_uid) {
        _cleanup_close_ int fd = -EBADF;
        pid_t pid;
        uid_t uid;
        int r;

        assert(listen_fd >= 0);
        assert(ret_fd);
        assert(ret_pid);
        assert(ret_uid);

        r = daemon_accept(listen_fd, &fd, &pid, &uid);
        if (r <= 0)
                return r;
        if (uid != 0 && (also_uid == UID_INVALID || uid != also_uid)) {
                log_struct(LOG_WARNING, "MESSAGE=Refused a connection from uid %u", (unsigned) uid,
                           "MCP_CLIENT_UID=%u", (unsigned) uid, "MCP_CLIENT_PID=%i", (int) pid,
                           "MCP_DECISION=%s", "denied");
                if (refuse)
                        refuse(fd, userdata);
                return 0;
        }
        *ret_fd = TAKE_FD(fd);
        *ret_pid = pid;
        *ret_uid = uid;
        return 1;
}

#define DAEMON_EXTRA_MAX 8

int daemon_parse_argv(const DaemonArgv *d, int argc, char *argv[]) {
        struct option options[3 + DAEMON_EXTRA_MAX + 1] = {
                { "help", no_argument, NULL, 'h' },
                { "listen", required_argument, NULL, 'l' },
                { "idle-exit-sec", required_argument, NULL, 'i' },
        };
        size_t n = 3;
        int c, r;

        assert(d);
        assert(d->help);
        assert(d->listen);
        assert(d->idle_exit_sec);
        assert(!d->extra || d->on_extra);
        assert(argv);

        for (const struct option *o = d->extra; o && o->name; o++) {
                assert(n < 3 + DAEMON_EXTRA_MAX);
                assert(!strchr("hli", o->val));
                options[n++] = *o;
        }

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        d->help();
                        return 0;
                case 'l':
                        *d->listen = optarg;
                        break;
                case 'i':
                        if (parse_uint(optarg, d->idle_exit_sec) < 0)
                                return log_error_errno(EINVAL, "Invalid --idle-exit-sec=%s", optarg);
                        break;
                case '?':
                        return -EINVAL;
                default:
                        if (!d->on_extra)
                                return -EINVAL;
                        r = d->on_extra(c, optarg);
                        if (r < 0)
                                return r;
                }
        if (optind < argc)
                return log_error_errno(EINVAL, "Unexpected argument: %s", argv[optind]);
        return 1;
}
