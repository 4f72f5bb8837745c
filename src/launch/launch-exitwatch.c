/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-exitwatch.h"

#include <assert.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "syscall-filter.h"
#include "util.h"

#define WATCH_STACK_SIZE (64 * 1024)

/* The thread's and the main loop's shared state: set once each. */
static atomic_int watched_pid;
static atomic_int heard_status = -EAGAIN;
static int event_fd = -EBADF;
static int listener_fd = -EBADF;

/* The watched exit_group(), held until exit_watch_release(): under the
 * lock, as either thread may answer it. */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static bool held, released;
static uint64_t held_id;

int exit_watch_install(void) {
        /* exit_group() of the native ABI: a notification; anything else:
         * allowed here (the main filter decides). */
        struct sock_filter prog[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYSCALL_FILTER_NATIVE_ARCH, 0, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog fprog = { .len = ELEMENTSOF(prog), .filter = prog };
        int fd;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return negative_errno();
        /* The listener comes close-on-exec: the interpreter never holds it. */
        fd = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
        if (fd < 0)
                return negative_errno();
        return fd;
}

static bool is_watched_exit(const struct seccomp_notif *req) {
        pid_t pid = atomic_load(&watched_pid);

        /* Only the main thread's call: its thread id is the pid. */
        return pid > 0 && (pid_t) req->pid == pid && req->data.nr == __NR_exit_group &&
                req->data.arch == SYSCALL_FILTER_NATIVE_ARCH;
}

static void hear_status(const struct seccomp_notif *req) {
        int expected = -EAGAIN;

        /* The status is what exit_group() takes, as the kernel keeps it;
         * the first call's (a call interrupted by a signal comes again). */
        if (atomic_compare_exchange_strong(&heard_status, &expected, W_EXITCODE((int) (req->data.args[0] & 0xff), 0)))
                (void) eventfd_write(event_fd, 1);
}

/* Holds the watched process's exit_group() (true), until
 * exit_watch_release(): while it waits in the call it takes no CPU, and the
 * kernel's teardown of its memory (milliseconds with the data stack) comes
 * after our report, not before it on the same core. */
static bool hold(const struct seccomp_notif *req) {
        bool r = false;

        if (!is_watched_exit(req))
                return false;
        (void) pthread_mutex_lock(&hold_lock);
        if (!released) {
                held = true;
                held_id = req->id;
                r = true;
        }
        (void) pthread_mutex_unlock(&hold_lock);
        return r;
}

/* Answers every other exit_group() under us, ours included, at once:
 * nothing here may block on anything else, or a process that is ending
 * would wait for it. */
static void *watch_thread(void *userdata) {
        int listener = (int) (intptr_t) userdata;

        for (;;) {
                struct seccomp_notif req;
                struct seccomp_notif_resp resp;

                /* The kernel wants it zeroed. */
                memset(&req, 0, sizeof req);
                if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
                        /* ENOENT: the caller died before we read it. */
                        if (errno == EINTR || errno == ENOENT)
                                continue;
                        return NULL;
                }
                if (hold(&req)) {
                        hear_status(&req);
                        continue;
                }
                resp = (struct seccomp_notif_resp) { .id = req.id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
                /* Failing: the caller was killed meanwhile and never exits
                 * this way (waitpid() tells how it did). */
                if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
                        continue;
                if (is_watched_exit(&req))
                        hear_status(&req);
        }
}

void exit_watch_release(void) {
        (void) pthread_mutex_lock(&hold_lock);
        released = true;
        if (held) {
                struct seccomp_notif_resp resp = { .id = held_id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };

                /* Failing: it was killed meanwhile, or a signal interrupted
                 * the call; then it comes again and is answered at once. */
                (void) ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
                held = false;
        }
        (void) pthread_mutex_unlock(&hold_lock);
}

int exit_watch_start(int listener) {
        _cleanup_close_ int fd = listener;
        pthread_attr_t attr;
        pthread_t t;
        sigset_t all, old;
        int r;

        assert(listener >= 0);

        event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (event_fd < 0)
                return negative_errno();
        r = pthread_attr_init(&attr);
        if (r != 0)
                return -r;
        r = pthread_attr_setstacksize(&attr, WATCH_STACK_SIZE);
        if (r == 0)
                r = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* No signal is for this thread: SIGCHLD, SIGPIPE stay the main one's. */
        (void) sigfillset(&all);
        (void) pthread_sigmask(SIG_BLOCK, &all, &old);
        if (r == 0)
                r = pthread_create(&t, &attr, watch_thread, (void *) (intptr_t) fd);
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        (void) pthread_attr_destroy(&attr);
        if (r != 0) {
                event_fd = safe_close(event_fd);
                return -r;
        }
        /* The thread's now, for the life of the process (and ours for
         * exit_watch_release()). */
        listener_fd = TAKE_FD(fd);
        return 0;
}

void exit_watch_set_pid(pid_t pid) {
        atomic_store(&watched_pid, pid);
}

int exit_watch_fd(void) {
        return event_fd;
}

int exit_watch_status(void) {
        return atomic_load(&heard_status);
}
