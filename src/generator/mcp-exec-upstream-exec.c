/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mcp-exec-upstream-exec [--egress [--setenv=K=V ...]] [ENV=ID ...] -- PROGRAM [ARG ...]
 *
 * The first process of an upstream server's unit when its servers.d file
 * has CREDENTIAL_ENV= or NETWORK=egress:POLICY: sets each environment
 * variable ENV to the content of the credential ID
 * ($CREDENTIALS_DIRECTORY/ID, from the unit's LoadCredential=; one final
 * newline dropped), then executes PROGRAM (an absolute path) with its
 * arguments. The secret is never on a command line nor in a unit property;
 * only in the server's own environment. Messages name the credential, never
 * its content. Fails (status 1, 127 if PROGRAM cannot be executed) rather
 * than starting the server without it.
 *
 * --setenv=K=V (with --egress only): sets K to V for the server: its
 * ENVIRONMENT, which the unit does not set (its root ExecStartPre=+ would
 * get it too).
 *
 * --egress (NETWORK=egress:POLICY): the trusted parent of the server, as
 * the launcher's is of a run's code (launch-egress.h, reused as is). It
 * takes the connection (a descriptor: StandardInput=socket would keep
 * systemd from passing any) and the feed mcp-exec-upstream-feed left in the
 * unit's fd store, listens
 * on 127.0.0.1:3128 in the unit's own network namespace (PrivateNetwork=,
 * only lo) and checks that namespace (only lo, no route out, no other
 * listener), then forks the server with the proxy variables set and a
 * seccomp filter that makes bind() and listen() fail, and passes every
 * connection it accepts over the feed to mcp-exec-egressd. It stays the
 * server's parent, not dumpable (the server, of the same dynamic user,
 * cannot ptrace it nor take its descriptors), and exits with the server's
 * status; its end is the unit's, which ends the run in egressd. When the
 * gateway closes the connection, a server that does not end within 5 s is
 * killed (it would keep its network with nobody to serve). Anything
 * that cannot be set up: the server never starts (status 1, the reason in
 * the journal). */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "egress-proto.h"
#include "launch-egress.h"
#include "macro.h"
#include "main-func.h"
#include "strv.h"
#include "upstream-units.h"

#define CREDENTIAL_MAX (64 * 1024)
/* After the gateway closed the connection, the time the server has to end
 * on its own (its stdin's EOF) before it is killed. */
#define HANGUP_GRACE_MS 5000

static int fail(const char *fmt, ...) _printf_(1, 2);
static int fail(const char *fmt, ...) {
        va_list ap;

        fputs("mcp-exec-upstream-exec: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return EXIT_FAILURE;
}

static bool env_name_ok(const char *s, size_t n) {
        if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
                      s[i] == '_'))
                        return false;
        return true;
}

/* Reads credential id (a plain file name in dir_fd) into ret. */
static int read_credential(int dir_fd, const char *id, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t n = 0;

        if (!*id || strchr(id, '/') || id[0] == '.')
                return fail("invalid credential name '%s'", id);
        fd = openat(dir_fd, id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0)
                return fail("cannot open the credential %s: %s", id, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return fail("the credential %s is no regular file", id);
        buf = malloc(CREDENTIAL_MAX + 1);
        if (!buf)
                return fail("out of memory");
        for (;;) {
                ssize_t k = read(fd, buf + n, CREDENTIAL_MAX + 1 - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return fail("cannot read the credential %s: %s", id, strerror(errno));
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > CREDENTIAL_MAX)
                        return fail("the credential %s is larger than 64 KiB", id);
        }
        if (n > 0 && buf[n - 1] == '\n')
                n--;
        if (n > 0 && buf[n - 1] == '\r')
                n--;
        if (memchr(buf, 0, n)) {
                explicit_bzero(buf, n);
                return fail("the credential %s holds a NUL byte, which no environment variable can", id);
        }
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        return 0;
}

static int set_one(int dir_fd, const char *pair) {
        _cleanup_free_ char *env = NULL, *value = NULL;
        const char *eq = strchr(pair, '=');
        int r;

        if (!eq || !env_name_ok(pair, (size_t) (eq - pair)))
                return fail("'%s' is not ENV=ID", pair);
        env = strndup(pair, (size_t) (eq - pair));
        if (!env)
                return fail("out of memory");
        r = read_credential(dir_fd, eq + 1, &value);
        if (r != 0)
                return r;
        r = setenv(env, value, 1) < 0 ? fail("cannot set %s: %s", env, strerror(errno)) : 0;
        explicit_bzero(value, strlen(value));
        return r;
}

static int set_credentials(char **pairs, int n) {
        _cleanup_close_ int dir_fd = -EBADF;
        const char *dir = getenv("CREDENTIALS_DIRECTORY");
        int r;

        if (n == 0)
                return 0;
        if (!dir)
                return fail("no $CREDENTIALS_DIRECTORY: the unit loads no credentials");
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return fail("cannot open $CREDENTIALS_DIRECTORY: %s", strerror(errno));
        for (int j = 0; j < n; j++) {
                r = set_one(dir_fd, pairs[j]);
                if (r != 0)
                        return r;
        }
        return 0;
}

/* The connection (Accept=yes: "connection") and the feed from the unit's fd
 * store (mcp-exec-upstream-feed's): -EBADF, said why, if one is missing.
 * Every other descriptor systemd passed (the control connection, which the
 * store keeps) is closed, and none of systemd's variables reach the server. */
static int take_fds(int *ret_conn, int *ret_feed) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_close_ int conn = -EBADF, feed = -EBADF;
        int n;

        n = sd_listen_fds_with_names(true, &names);
        if (n < 0) {
                fail("cannot read the descriptors systemd passed: %s", strerror(-n));
                return -EBADF;
        }
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;
                const char *name = names ? names[i] : NULL;

                if (feed < 0 && streq_ptr(name, UPSTREAM_FDNAME_FEED))
                        feed = fd;
                else if (conn < 0 && streq_ptr(name, "connection"))
                        conn = fd;
                else
                        (void) close(fd);
        }
        (void) unsetenv("NOTIFY_SOCKET");
        if (conn < 0 || feed < 0) {
                fail("no %s from systemd (%s)", conn < 0 ? "connection" : "egress feed",
                     conn < 0 ? "Accept=yes" : "the unit's fd store, where mcp-exec-upstream-feed leaves it");
                return -EBADF;
        }
        if (fcntl(feed, F_SETFD, FD_CLOEXEC) < 0 || fcntl(feed, F_SETFL, O_NONBLOCK) < 0 ||
            fcntl(conn, F_SETFD, FD_CLOEXEC) < 0) {
                fail("cannot set up the descriptors: %s", strerror(errno));
                return -EBADF;
        }
        *ret_conn = TAKE_FD(conn);
        *ret_feed = TAKE_FD(feed);
        return 0;
}

/* The server's process: the connection as its stdin and stdout, the proxy
 * variables, the filter, the program. */
_noreturn_ static void exec_server(char **argv, int conn, const sigset_t *saved) {
        int r;

        (void) sigprocmask(SIG_SETMASK, saved, NULL);
        if (dup2(conn, STDIN_FILENO) < 0 || dup2(conn, STDOUT_FILENO) < 0) {
                fail("cannot make the connection the server's stdio: %s", strerror(errno));
                _exit(EXIT_FAILURE);
        }
        for (const char *const *e = launch_egress_env; *e; e++)
                if (putenv((char *) *e) < 0)
                        _exit(EXIT_FAILURE);
        r = launch_egress_seccomp();
        if (r < 0) {
                fail("cannot forbid bind() and listen() to the server: %s", strerror(-r));
                _exit(EXIT_FAILURE);
        }
        execv(argv[0], argv);
        fail("cannot execute %s: %s", argv[0], strerror(errno));
        _exit(127);
}

/* The server's status as ours: its exit code, or 128 + its signal. */
static int reap(pid_t pid) {
        int status;

        if (waitpid(pid, &status, WNOHANG) != pid)
                return -1;
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static int64_t now_ms(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The gateway closed the connection (POLLRDHUP on our copy of it): the
 * instance is no longer wanted. A server ends at its stdin's EOF; one that
 * does not (ignoring it, and SIGTERM) would keep its network and its run
 * in egressd with nobody to serve, and its slot: killed after a grace. */
static int hangup_wait(int *conn, int64_t *deadline, pid_t pid, short revents) {
        if (*conn >= 0 && (revents & (POLLRDHUP | POLLHUP | POLLERR))) {
                *conn = safe_close(*conn);
                *deadline = now_ms() + HANGUP_GRACE_MS;
        }
        if (*deadline < 0)
                return -1;
        if (now_ms() < *deadline)
                return (int) (*deadline - now_ms());
        fprintf(stderr, "mcp-exec-upstream-exec: the server did not end within %d s of its connection's end; "
                "killed\n", HANGUP_GRACE_MS / 1000);
        (void) kill(pid, SIGKILL);
        *deadline = -1;
        return -1;
}

/* Passes connections on until the server ends; a signal to us goes to it.
 * A feed that ends (egressd stopped or restarted) ends the instance too:
 * a long-lived server would stay without network, and the gateway's next
 * connection gets a new instance with a new feed. So does the connection's
 * end, if the server does not end with it (hangup_wait()). */
static int supervise(LaunchEgress *eg, pid_t pid, int sfd, int conn) {
        _cleanup_close_ int c = conn;
        int64_t deadline = -1;
        int timeout = -1;

        for (;;) {
                struct pollfd p[4] = {
                        launch_egress_pollfd(eg),
                        { .fd = sfd, .events = POLLIN },
                        { .fd = eg->feed },     /* POLLHUP, POLLERR */
                        { .fd = c, .events = POLLRDHUP },
                };
                struct signalfd_siginfo si;
                int status;

                if (poll(p, 4, timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        (void) kill(pid, SIGKILL);
                        return fail("poll failed: %s", strerror(errno));
                }
                if (p[0].revents)
                        launch_egress_dispatch(eg);
                if (eg->feed < 0 || (p[2].revents & (POLLHUP | POLLERR))) {
                        (void) kill(pid, SIGKILL);
                        return fail("the egress feed ended (mcp-exec-egressd stopped?); the instance ends with it");
                }
                timeout = hangup_wait(&c, &deadline, pid, p[3].revents);
                if (!(p[1].revents & POLLIN) || read(sfd, &si, sizeof si) != (ssize_t) sizeof si)
                        continue;
                if (si.ssi_signo != SIGCHLD)
                        (void) kill(pid, (int) si.ssi_signo);
                status = reap(pid);
                if (status >= 0)
                        return status;
        }
}

/* Sets the leading --setenv=K=V of args (of n): 0 and *ret_n how many, or
 * EXIT_FAILURE. */
static int set_env_args(char **args, int n, int *ret_n) {
        int i;

        for (i = 0; i < n && strneq(args[i], "--setenv=", strlen("--setenv=")); i++) {
                const char *pair = args[i] + strlen("--setenv="), *eq = strchr(pair, '=');
                _cleanup_free_ char *k = NULL;

                if (!eq || !env_name_ok(pair, (size_t) (eq - pair)))
                        return fail("'%s' is not --setenv=K=V", args[i]);
                k = strndup(pair, (size_t) (eq - pair));
                if (!k)
                        return fail("out of memory");
                if (setenv(k, eq + 1, 1) < 0)
                        return fail("cannot set %s: %s", k, strerror(errno));
        }
        *ret_n = i;
        return 0;
}

static int run_egress(char **pairs, int n_pairs, char **argv) {
        _cleanup_(launch_egress_done) LaunchEgress eg = LAUNCH_EGRESS_NULL;
        _cleanup_close_ int sfd = -EBADF, conn = -EBADF;
        const char *reason = NULL;
        sigset_t mask, saved;
        pid_t pid;
        int r, n_env = 0;

        /* First: from here on the server's uid cannot read our memory. */
        if (prctl(PR_SET_DUMPABLE, 0) < 0)
                return fail("cannot make the supervisor undumpable: %s", strerror(errno));
        if (take_fds(&conn, &eg.feed) < 0)
                return EXIT_FAILURE;
        /* After take_fds(): its unsetenv() of systemd's variables is not
         * to undo the server's own. */
        r = set_env_args(pairs, n_pairs, &n_env);
        if (r != 0)
                return r;
        r = set_credentials(pairs + n_env, n_pairs - n_env);
        if (r != 0)
                return r;
        eg.listener = launch_egress_listen();
        if (eg.listener < 0)
                return fail("cannot listen on " EGRESS_LISTEN_ADDR ":%d: %s", EGRESS_LISTEN_PORT,
                            strerror(-eg.listener));
        r = launch_egress_check(eg.listener, &reason);
        if (r < 0)
                return fail("%s (%s); the server is not started", reason, strerror(-r));
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, &saved) < 0 ||
            (sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
                return fail("cannot set up the supervisor: %s", strerror(errno));
        pid = fork();
        if (pid < 0)
                return fail("cannot fork the server: %s", strerror(errno));
        if (pid == 0)
                exec_server(argv, conn, &saved);
        /* Our copy is only watched for the gateway's end (POLLRDHUP), never
         * read: the connection is the server's. */
        return supervise(&eg, pid, sfd, TAKE_FD(conn));
}

static int run(int argc, char *argv[]) {
        bool egress = argc > 1 && streq(argv[1], "--egress");
        int first = egress ? 2 : 1, i, r;

        for (i = first; i < argc && !streq(argv[i], "--"); i++)
                ;
        if (i + 1 >= argc || argv[i + 1][0] != '/')
                return fail("usage: mcp-exec-upstream-exec [--egress] [ENV=ID ...] -- /PROGRAM [ARG ...]");
        if (egress)
                return run_egress(argv + first, i - first, argv + i + 1);
        r = set_credentials(argv + first, i - first);
        if (r != 0)
                return r;
        execv(argv[i + 1], argv + i + 1);
        fail("cannot execute %s: %s", argv[i + 1], strerror(errno));
        return 127;
}

DEFINE_MAIN_FUNCTION(run);
