/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/basic/daemon-util.[ch]: listening with or without
 * socket activation, accepting, and the idle timer. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "daemon-util.h"
#include "macro.h"
#include "socket-util.h"
#include "test-helpers.h"

static void check_listener(int fd, bool cloexec) {
        int type = 0, flags;
        socklen_t l = sizeof type;

        ASSERT_EQ_INT(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l), 0);
        ASSERT_EQ_INT(type, SOCK_SEQPACKET);
        flags = fcntl(fd, F_GETFL);
        ASSERT_TRUE(flags >= 0 && (flags & O_NONBLOCK));
        if (cloexec)
                ASSERT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
}

TEST(test_listen_own) {
        char dir[] = "/tmp/test-daemon-util-XXXXXX", path[64];
        struct stat st;
        int fd = -EBADF, c;

        ASSERT_TRUE(mkdtemp(dir));
        (void) snprintf(path, sizeof path, "%s/s", dir);
        ASSERT_EQ_INT(unsetenv("LISTEN_FDS"), 0);
        /* A leftover at the path (a stale socket, or anything) is replaced. */
        c = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        ASSERT_TRUE(c >= 0);
        (void) close(c);

        ASSERT_EQ_INT(daemon_listen_unix(path, 5, &fd), 0);
        check_listener(fd, true);
        ASSERT_EQ_INT(stat(path, &st), 0);
        ASSERT_TRUE(S_ISSOCK(st.st_mode));
        ASSERT_EQ_INT(st.st_mode & 07777, 0600);
        c = socket_connect_unix(SOCK_SEQPACKET, path);
        ASSERT_TRUE(c >= 0);
        (void) close(c);
        (void) close(fd);

        /* Nowhere to bind: an error, and nothing in *ret_fd. */
        fd = -EBADF;
        (void) snprintf(path, sizeof path, "%s/missing/s", dir);
        ASSERT_EQ_INT(daemon_listen_unix(path, 5, &fd), -ENOENT);
        ASSERT_EQ_INT(fd, -EBADF);

        (void) snprintf(path, sizeof path, "%s/s", dir);
        (void) unlink(path);
        (void) rmdir(dir);
}

TEST(test_accept) {
        char dir[] = "/tmp/test-daemon-util-XXXXXX", path[64];
        int l = -EBADF, c, fd = -EBADF, sp[2];
        pid_t pid = 0;
        uid_t uid = 4242;

        ASSERT_TRUE(mkdtemp(dir));
        (void) snprintf(path, sizeof path, "%s/s", dir);
        ASSERT_EQ_INT(unsetenv("LISTEN_FDS"), 0);
        ASSERT_EQ_INT(daemon_listen_unix(path, 5, &l), 0);

        /* Nobody there: 0, nothing in the out-params. */
        ASSERT_EQ_INT(daemon_accept(l, &fd, &pid, &uid), 0);
        ASSERT_EQ_INT(fd, -EBADF);

        /* A connection, with our own credentials, non-blocking and O_CLOEXEC. */
        c = socket_connect_unix(SOCK_SEQPACKET, path);
        ASSERT_TRUE(c >= 0);
        ASSERT_EQ_INT(daemon_accept(l, &fd, &pid, &uid), 1);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ_INT(pid, getpid());
        ASSERT_EQ_INT(uid, getuid());
        ASSERT_TRUE(fcntl(fd, F_GETFL) & O_NONBLOCK);
        ASSERT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        (void) close(fd);
        (void) close(c);

        /* A socket that does not listen: accept's error, nothing taken. */
        fd = -EBADF;
        ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
        ASSERT_EQ_INT(daemon_accept(sp[0], &fd, &pid, &uid), -EINVAL);
        ASSERT_EQ_INT(fd, -EBADF);
        (void) close(sp[0]);
        (void) close(sp[1]);

        (void) close(l);
        (void) unlink(path);
        (void) rmdir(dir);
}

static unsigned n_refused;

static void count_refused(int fd, void *userdata) {
        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(userdata == &n_refused);
        n_refused++;
        ASSERT_EQ_INT(write(fd, "no", 2), 2);
}

/* A child connected to path as uid as (root drops to it), which exits with
 * 0 if it read the daemon's "no", 1 if the connection was simply closed. */
static pid_t connect_as(const char *path, uid_t as) {
        pid_t child = fork();
        char buf[8];
        ssize_t n;
        int c;

        ASSERT_TRUE(child >= 0);
        if (child > 0)
                return child;
        if (as != getuid() && setresuid(as, as, as) < 0)
                _exit(3);
        c = socket_connect_unix(SOCK_SEQPACKET, path);
        if (c < 0)
                _exit(4);
        n = read(c, buf, sizeof buf);
        _exit(n == 2 && memcmp(buf, "no", 2) == 0 ? 0 : n == 0 ? 1 : 2);
}

static int wait_child(pid_t child) {
        int status;

        ASSERT_EQ_INT(waitpid(child, &status, 0), child);
        ASSERT_TRUE(WIFEXITED(status));
        return WEXITSTATUS(status);
}

/* Takes the one connection that is coming (the listener is non-blocking). */
static int accept_root(int l, uid_t also, daemon_refuse_t refuse, int *fd, pid_t *pid, uid_t *uid) {
        struct pollfd p = { .fd = l, .events = POLLIN };

        ASSERT_EQ_INT(poll(&p, 1, -1), 1);
        return daemon_accept_root(l, also, refuse, &n_refused, fd, pid, uid);
}

TEST(test_accept_root) {
        char dir[] = "/tmp/test-daemon-util-XXXXXX", path[64];
        /* A uid that is not root and not ours: root's child drops to it. */
        uid_t other = getuid() == 0 ? 65534 : getuid();
        int l = -EBADF, fd = -EBADF;
        pid_t pid = 0, child;
        uid_t uid = 4242;

        ASSERT_TRUE(mkdtemp(dir));
        ASSERT_EQ_INT(chmod(dir, 0755), 0);
        (void) snprintf(path, sizeof path, "%s/s", dir);
        ASSERT_EQ_INT(unsetenv("LISTEN_FDS"), 0);
        ASSERT_EQ_INT(daemon_listen_unix(path, 5, &l), 0);
        /* So that the other uid may connect and be refused by us, not by the mode. */
        ASSERT_EQ_INT(chmod(path, 0666), 0);

        /* Nobody there: 0, nothing in the out-params. */
        ASSERT_EQ_INT(daemon_accept_root(l, UID_INVALID, count_refused, &n_refused, &fd, &pid, &uid), 0);
        ASSERT_EQ_INT(fd, -EBADF);

        /* Neither root nor the one other uid: refused, answered, closed; 0 as for nothing. */
        child = connect_as(path, other);
        ASSERT_EQ_INT(accept_root(l, UID_INVALID, count_refused, &fd, &pid, &uid), 0);
        ASSERT_EQ_INT(fd, -EBADF);
        ASSERT_EQ_INT(uid, 4242);
        ASSERT_EQ_INT(n_refused, 1u);
        ASSERT_EQ_INT(wait_child(child), 0);

        /* Without an answer: just closed. */
        child = connect_as(path, other);
        ASSERT_EQ_INT(accept_root(l, UID_INVALID, NULL, &fd, &pid, &uid), 0);
        ASSERT_EQ_INT(fd, -EBADF);
        ASSERT_EQ_INT(n_refused, 1u);
        ASSERT_EQ_INT(wait_child(child), 1);

        /* The one other uid the caller admits (the broker: the front end's user). */
        child = connect_as(path, other);
        ASSERT_EQ_INT(accept_root(l, other, count_refused, &fd, &pid, &uid), 1);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ_INT(pid, child);
        ASSERT_EQ_INT(uid, other);
        ASSERT_EQ_INT(n_refused, 1u);
        (void) close(fd);
        ASSERT_EQ_INT(wait_child(child), 1);

        /* Root, always (only where the test runs as root). */
        if (getuid() == 0) {
                fd = -EBADF;
                child = connect_as(path, 0);
                ASSERT_EQ_INT(accept_root(l, UID_INVALID, count_refused, &fd, &pid, &uid), 1);
                ASSERT_TRUE(fd >= 0);
                ASSERT_EQ_INT(uid, 0);
                (void) close(fd);
                ASSERT_EQ_INT(wait_child(child), 1);
        }

        (void) close(l);
        (void) unlink(path);
        (void) rmdir(dir);
}

static unsigned n_help;
static char *last_launcher;

static void count_help(void) {
        n_help++;
}

static int on_launcher(int c, char *arg) {
        ASSERT_EQ_INT(c, 'L');
        if (arg[0] == '\0')
                return -EINVAL;
        last_launcher = arg;
        return 0;
}

/* daemon_parse_argv() on a command line of words (at most 7). */
static int parse(const DaemonArgv *d, const char *const *words) {
        char *argv[8] = { (char *) "daemon" };
        int argc = 1;

        for (; words[argc - 1]; argc++)
                argv[argc] = (char *) words[argc - 1];
        optind = 0;     /* getopt starts over */
        return daemon_parse_argv(d, argc, argv);
}

TEST(test_parse_argv) {
        static const struct option extra[] = {
                { "launcher", required_argument, NULL, 'L' },
                {},
        };
        const char *listen = NULL;
        uint64_t idle = 30;
        DaemonArgv plain = { .help = count_help, .listen = &listen, .idle_exit_sec = &idle };
        DaemonArgv more = { .help = count_help, .extra = extra, .on_extra = on_launcher,
                            .listen = &listen, .idle_exit_sec = &idle };

        ASSERT_EQ_INT(parse(&plain, (const char *const[]) { NULL }), 1);
        ASSERT_TRUE(!listen);
        ASSERT_EQ_INT(idle, 30u);
        ASSERT_EQ_INT(parse(&plain, (const char *const[]) { "--listen=/run/x", "--idle-exit-sec", "7", NULL }), 1);
        ASSERT_STREQ(listen, "/run/x");
        ASSERT_EQ_INT(idle, 7u);

        /* --help: printed, and 0 (exit, successfully). */
        ASSERT_EQ_INT(parse(&plain, (const char *const[]) { "-h", NULL }), 0);
        ASSERT_EQ_INT(parse(&plain, (const char *const[]) { "--help", "--bogus", NULL }), 0);
        ASSERT_EQ_INT(n_help, 2u);

        /* Bad input: an error, never a run. */
        ASSERT_EQ_INT(parse(&plain, (const char *const[]) { "--idle-exit-sec=soon", NULL }), -EINVAL);
        ASSERT_EQ_INT(parse(&plain, (const char *const[]) { "--bogus", NULL }), -EINVAL);
        ASSERT_EQ_INT(parse(&plain, (const char *const[]) { "extra", NULL }), -EINVAL);
        /* Another daemon's option is not this one's. */
        ASSERT_EQ_INT(parse(&plain, (const char *const[]) { "--launcher=/x", NULL }), -EINVAL);

        /* A daemon's own options go to its callback, which may refuse them. */
        ASSERT_EQ_INT(parse(&more, (const char *const[]) { "--launcher=/usr/x", "--idle-exit-sec=0", NULL }), 1);
        ASSERT_STREQ(last_launcher, "/usr/x");
        ASSERT_EQ_INT(idle, 0u);
        ASSERT_EQ_INT(parse(&more, (const char *const[]) { "--launcher=", NULL }), -EINVAL);
        ASSERT_EQ_INT(n_help, 2u);
}

/* In a child: fd 3 and $LISTEN_* are the process's own. */
static void activated_child(int n_fds) {
        int s, fd = -EBADF, r;
        char buf[16];

        s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        ASSERT_TRUE(s >= 0);
        for (int i = 0; i < n_fds; i++)
                ASSERT_EQ_INT(dup2(s, SD_LISTEN_FDS_START + i), SD_LISTEN_FDS_START + i);
        (void) snprintf(buf, sizeof buf, "%d", (int) getpid());
        ASSERT_EQ_INT(setenv("LISTEN_PID", buf, 1), 0);
        (void) snprintf(buf, sizeof buf, "%d", n_fds);
        ASSERT_EQ_INT(setenv("LISTEN_FDS", buf, 1), 0);

        r = daemon_listen_unix("/nonexistent/never-bound", 5, &fd);
        if (n_fds == 1) {
                ASSERT_EQ_INT(r, 1);
                ASSERT_EQ_INT(fd, SD_LISTEN_FDS_START);
                check_listener(fd, false);
        } else
                ASSERT_EQ_INT(r, -EINVAL);
        /* Taken from the environment: children do not see them. */
        ASSERT_TRUE(!getenv("LISTEN_FDS"));
        _exit(EXIT_SUCCESS);
}

TEST(test_listen_activated) {
        for (int n = 1; n <= 2; n++) {
                int status;
                pid_t pid = fork();

                ASSERT_TRUE(pid >= 0);
                if (pid == 0)
                        activated_child(n);
                ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
                ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SUCCESS);
        }
}

static int on_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        unsigned *n = userdata;

        (*n)++;
        return daemon_exit_idle(sd_event_source_get_event(s));
}

TEST(test_idle_timer) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        sd_event_source *t = NULL;
        unsigned fired = 0;
        int enabled;

        ASSERT_EQ_INT(unsetenv("NOTIFY_SOCKET"), 0);
        ASSERT_EQ_INT(sd_event_new(&e), 0);

        /* Busy before any timer: none is made. */
        daemon_idle_update(e, &t, 1000, true, on_idle, &fired);
        ASSERT_TRUE(!t);
        daemon_idle_update(e, &t, 1000, false, on_idle, &fired);
        ASSERT_TRUE(t);
        ASSERT_EQ_INT(sd_event_source_get_enabled(t, &enabled), 1);
        ASSERT_EQ_INT(enabled, SD_EVENT_ONESHOT);
        daemon_idle_update(e, &t, 1000, true, on_idle, &fired);
        ASSERT_EQ_INT(sd_event_source_get_enabled(t, &enabled), 0);
        ASSERT_EQ_INT(enabled, SD_EVENT_OFF);
        /* Idle again: the same timer, armed again; it ends the loop. */
        sd_event_source *before = t;
        daemon_idle_update(e, &t, 1000, false, on_idle, &fired);
        ASSERT_TRUE(t == before);
        ASSERT_EQ_INT(sd_event_loop(e), 0);
        ASSERT_EQ_INT(fired, 1);
        sd_event_source_disable_unref(t);
}

int main(void) {
        RUN(test_listen_own);
        RUN(test_listen_activated);
        RUN(test_accept);
        RUN(test_accept_root);
        RUN(test_parse_argv);
        RUN(test_idle_timer);
        return 0;
}
