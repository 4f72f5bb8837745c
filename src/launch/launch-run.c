/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-run.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker-proto.h"
#include "json-cleanup.h"
#include "json-util.h"
#include "launch-collect.h"
#include "launch-frame.h"
#include "launch-probe.h"
#include "macro.h"
#include "util.h"

#define CONTROL_FD STDIN_FILENO         /* the broker's end: the unit's stdin */
#define CHILD_CONTROL_FD 3              /* the interpreter's end, in the interpreter */
#define COLLECT_BUDGET_USEC (2 * USEC_PER_SEC)
#define MPL_CACHE_MAX ((off_t) 8 << 20)

/* Before the run: diagnostics to the unit's stderr (the journal; nothing of
 * any code exists yet). During it: to the caller's stderr. */
static int err_fd = STDERR_FILENO;

static int fail(const char *msg, int error) {
        char buf[512];
        int n;

        if (error)
                n = snprintf(buf, sizeof buf, "mcp-exec-launch: %s: %s\n", msg, strerror(error < 0 ? -error : error));
        else
                n = snprintf(buf, sizeof buf, "mcp-exec-launch: %s\n", msg);
        if (n > 0)
                (void) !write(err_fd, buf, MIN((size_t) n, sizeof buf - 1));
        return LAUNCH_EXIT_FAILED;
}

/* The interpreter's environment, built from nothing: the daemon's (the token
 * included) never reaches the code. One thread per numeric library, so that
 * their pools do not trip TasksMax=; matplotlib draws without a display and
 * keeps its caches in the run's own directory. */
static char **child_env(const LaunchArgs *a) {
        static char mpl[4096 + 16];
        static char *env[] = {
                (char *) "PATH=/usr/local/bin:/usr/bin:/bin",
                (char *) "HOME=/tmp",
                (char *) "TMPDIR=/tmp",
                (char *) "LANG=C.UTF-8",
                (char *) "MPLBACKEND=Agg",
                (char *) "OPENBLAS_NUM_THREADS=1",
                (char *) "OMP_NUM_THREADS=1",
                (char *) "MKL_NUM_THREADS=1",
                (char *) "NUMEXPR_NUM_THREADS=1",
                NULL,   /* MPLCONFIGDIR */
                NULL,
        };

        if (a->mpl_dir) {
                (void) snprintf(mpl, sizeof mpl, "MPLCONFIGDIR=%s", a->mpl_dir);
                env[ELEMENTSOF(env) - 2] = mpl;
        }
        return env;
}

/* A prebuilt matplotlib font cache, so that no run builds its own (seconds). */
static void seed_mpl_cache(const LaunchArgs *a) {
        _cleanup_close_ int in = -EBADF, out = -EBADF, dir = -EBADF;
        const char *base;
        struct stat st;

        if (!a->mpl_cache || !a->mpl_dir)
                return;
        base = strrchr(a->mpl_cache, '/');
        base = base ? base + 1 : a->mpl_cache;
        in = open(a->mpl_cache, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MPL_CACHE_MAX)
                return;
        dir = open(a->mpl_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return;
        out = openat(dir, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (out < 0)
                return;
        for (off_t left = st.st_size; left > 0;) {
                ssize_t k = sendfile(out, in, NULL, (size_t) left);
                if (k <= 0) {
                        (void) unlinkat(dir, base, 0);
                        return;
                }
                left -= k;
        }
}

static pid_t spawn_interpreter(const LaunchArgs *a, int child_control) {
        char arg_preload[4096 + 16];
        char *argv[] = { (char *) "python3", (char *) "-I", (char *) "-B", (char *) "-u", (char *) a->bootstrap,
                         arg_preload, NULL };
        pid_t pid;

        (void) snprintf(arg_preload, sizeof arg_preload, "--preload=%s", a->preload ?: "");
        pid = fork();
        if (pid != 0)
                return pid;

        /* The child, until exec: only async-signal-safe calls. */
        {
                struct sigaction sa = { .sa_handler = SIG_DFL };
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

                /* The parent ignores SIGPIPE; a program gets the default, as in a shell. */
                (void) sigaction(SIGPIPE, &sa, NULL);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(child_control, CHILD_CONTROL_FD) < 0)
                        _exit(LAUNCH_EXIT_FAILED);
                (void) close_range(CHILD_CONTROL_FD + 1, ~0U, 0);
                execve(a->python, argv, child_env(a));
                _exit(LAUNCH_EXIT_FAILED);
        }
}

/* "ready OK,OK FAILED:ERR" from the interpreter, as the broker's JSON. */
static json_object *ready_message(const char *text) {
        _cleanup_json_ json_object *j = json_object_new_object();
        json_object *ok, *failed;
        char ok_s[4096], failed_s[4096];

        if (!j || sscanf(text, "ready %4095s %4095s", ok_s, failed_s) != 2)
                return NULL;
        ok = json_object_new_array();
        failed = json_object_new_array();
        if (!ok || !failed) {
                json_object_put(ok);
                json_object_put(failed);
                return NULL;
        }
        for (char *s = ok_s, *save = NULL, *t; !streq(ok_s, "-") && (t = strtok_r(s, ",", &save)); s = NULL)
                (void) json_object_array_add(ok, json_object_new_string(t));
        for (char *s = failed_s, *save = NULL, *t; !streq(failed_s, "-") && (t = strtok_r(s, ",", &save)); s = NULL)
                (void) json_object_array_add(failed, json_object_new_string(t));
        json_object_object_add(j, "event", json_object_new_string("ready"));
        json_object_object_add(j, "preloaded", ok);
        json_object_object_add(j, "failed", failed);
        return TAKE_PTR(j);
}

static int copy_exact(int in, int out, uint64_t len) {
        static uint8_t buf[64 * 1024];
        int r;

        while (len > 0) {
                size_t n = (size_t) MIN(len, (uint64_t) sizeof buf);
                r = loop_read_exact(in, buf, n);
                if (r < 0)
                        return r;
                if (out >= 0) {
                        r = loop_write(out, buf, n);
                        if (r < 0)
                                return r;
                }
                len -= n;
        }
        return 0;
}

/* The input files of a version-2 frame, into the run's /tmp. Names were
 * checked by the front end; checked again, as everything from outside. */
static int read_files(int in, uint64_t max_total) {
        uint8_t h[LAUNCH_FILES_HEADER_SIZE];
        uint64_t total = 0;
        uint32_t count;
        int r;

        r = loop_read_exact(in, h, sizeof h);
        if (r < 0)
                return fail("reading the input files", r);
        if (launch_files_parse(h, &count) < 0)
                return fail("too many input files", 0);
        for (uint32_t i = 0; i < count; i++) {
                uint8_t eh[LAUNCH_FILE_ENTRY_HEADER_SIZE];
                char name[LAUNCH_FILE_NAME_MAX + 1];
                _cleanup_close_ int fd = -EBADF;
                uint16_t name_len;
                uint64_t data_len;

                r = loop_read_exact(in, eh, sizeof eh);
                if (r < 0)
                        return fail("reading the input files", r);
                r = launch_file_entry_parse(eh, max_total - total, &name_len, &data_len);
                if (r == -EFBIG)
                        return fail("the input files exceed MCP_EXEC_MAX_INPUT_BYTES", 0);
                if (r < 0)
                        return fail("malformed input file entry", 0);
                r = loop_read_exact(in, name, name_len);
                if (r < 0)
                        return fail("reading the input files", r);
                name[name_len] = 0;
                if (!launch_file_name_valid(name, name_len) || strlen(name) != name_len)
                        return fail("an input file name is not a plain file name", 0);
                /* Relative to the working directory, /tmp: the name has no '/'. */
                fd = openat(AT_FDCWD, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0)
                        return fail("creating an input file", errno);
                r = copy_exact(in, fd, data_len);
                if (r < 0)
                        return fail("writing an input file", r);
                total += data_len;
        }
        return 0;
}

/* The code frame from stdin into a sealed memfd; the input files into /tmp.
 * What follows on stdin is the program's. */
static int read_code(int in, uint64_t max_code, uint64_t max_input, int *ret_memfd) {
        uint8_t hdr[LAUNCH_FRAME_HEADER_SIZE];
        _cleanup_close_ int fd = -EBADF;
        uint32_t version;
        uint64_t len;
        int r;

        r = loop_read_exact(in, hdr, sizeof hdr);
        if (r < 0)
                return fail("no code on stdin", r == -EPIPE ? 0 : r);
        r = launch_frame_parse_version(hdr, sizeof hdr, max_code, &len, &version);
        if (r == -EFBIG)
                return fail("code exceeds the configured maximum size", 0);
        if (r < 0)
                return fail("malformed code frame on stdin", 0);

        fd = memfd_create("mcp-exec-code", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return fail("memfd_create", errno);
        r = copy_exact(in, fd, len);
        if (r < 0)
                return fail("reading code", r == -EPIPE ? EPIPE : r);
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                return fail("sealing code", errno);
        if (version == LAUNCH_FRAME_VERSION_FILES) {
                r = read_files(in, max_input);
                if (r != 0)
                        return r;
        }
        *ret_memfd = TAKE_FD(fd);
        return 0;
}

static int send_fds(int sock, const char *msg, const int *fds, size_t n) {
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * 4)];
        } control = {};
        struct iovec iov = { .iov_base = (void *) msg, .iov_len = strlen(msg) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

        assert(n <= 4);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
        return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* The program's end as the unit's: its exit code, or its signal. */
_noreturn_ static void exit_like(int status) {
        if (WIFSIGNALED(status)) {
                int sig = WTERMSIG(status);
                struct sigaction sa = { .sa_handler = SIG_DFL };
                sigset_t all;

                (void) sigaction(sig, &sa, NULL);
                (void) sigfillset(&all);
                (void) sigprocmask(SIG_UNBLOCK, &all, NULL);
                (void) raise(sig);
                _exit(128 + sig);
        }
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : LAUNCH_EXIT_FAILED);
}

int launch_run(const LaunchArgs *a) {
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        _cleanup_json_ json_object *ready = NULL, *run = NULL;
        _cleanup_close_ int code = -EBADF;
        int fds[BROKER_MAX_FDS] = { -EBADF, -EBADF, -EBADF, -EBADF };
        ResultWriter w = { .fd = -EBADF, .limits = RESULT_LIMITS_DEFAULT };
        uint64_t t0, t1;
        char go[32];
        size_t n_fds = 0;
        char buf[8192];
        ssize_t k;
        pid_t pid;
        int r, status;

        assert(a);
        (void) signal(SIGPIPE, SIG_IGN);

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return fail("socketpair", errno);
        seed_mpl_cache(a);
        pid = spawn_interpreter(a, sp[1]);
        if (pid < 0)
                return fail("fork", errno);
        sp[1] = safe_close(sp[1]);
        /* From here the program may run beside us: our memory and fds are
         * ours alone (no /proc/PID/mem, /proc/PID/fd, ptrace by the same uid). */
        (void) prctl(PR_SET_DUMPABLE, 0);

        /* 1. The interpreter is up, with its preload. */
        k = recv(sp[0], buf, sizeof buf - 1, 0);
        if (k <= 0) {
                (void) waitpid(pid, &status, 0);
                return fail("the interpreter did not start (a preloaded module may have crashed it)", 0);
        }
        buf[k] = 0;
        ready = ready_message(buf);
        if (!ready)
                return fail("the interpreter sent no ready message", 0);
        r = broker_send(CONTROL_FD, ready, NULL, 0);
        if (r < 0)
                return fail("telling the broker we are ready", r);

        /* 2. The run: stdin, stdout, stderr, maybe the result channel. EOF:
         * the broker stopped us (the pool drained); nothing ran. */
        do
                r = broker_recv(CONTROL_FD, &run, fds, ELEMENTSOF(fds), &n_fds);
        while (r == -EAGAIN || r == -EINTR);
        if (r == 0)
                return 0;
        if (r < 0 || !streq_ptr(json_get_string(run, "op"), "run") || n_fds < 3)
                return fail("malformed run message from the broker", r < 0 ? r : 0);
        if (n_fds == 4)
                w.fd = fds[3];
        result_limits_from_json(json_get(run, "limits"), &w.limits);
        err_fd = fds[2];

        /* 3. The code and the input files. */
        r = read_code(fds[0], a->max_code_bytes, w.limits.max_input_bytes, &code);
        if (r != 0)
                return r;
        t0 = now_usec();
        (void) snprintf(go, sizeof go, "go %" PRIu64, w.limits.max_images);
        r = send_fds(sp[0], go, (int[]) { fds[0], fds[1], fds[2], code }, 4);
        if (r < 0)
                return fail("handing the run to the interpreter", r);
        /* Only the program holds them now: EOF on the caller's side means it is gone. */
        for (size_t i = 0; i < 3; i++)
                fds[i] = safe_close(fds[i]);
        code = safe_close(code);
        err_fd = -EBADF;

        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        status = W_EXITCODE(LAUNCH_EXIT_FAILED, 0);
                        break;
                }
        t1 = now_usec();

        /* 4. What it left, then how it ended. */
        if (w.fd >= 0) {
                json_object *m = json_object_new_object();

                w.deadline = now_usec() + COLLECT_BUDGET_USEC;
                collect_figures(&w, sp[0]);
                collect_outputs(&w);
                if (m) {
                        if (WIFSIGNALED(status))
                                json_object_object_add(m, "signal", json_object_new_int(WTERMSIG(status)));
                        else
                                json_object_object_add(m, "exit_code", json_object_new_int(WEXITSTATUS(status)));
                        json_object_object_add(m, "duration_us", json_object_new_int64((int64_t) (t1 - t0)));
                        result_send(&w, RESULT_FRAME_STATUS, m, NULL, 0);
                }
                result_send(&w, RESULT_FRAME_END, NULL, NULL, 0);
                w.fd = safe_close(w.fd);
        }
        exit_like(status);
}
