/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "util.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-id128.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"

int fd_nonblock(int fd, bool nonblock) {
        int flags = fcntl(fd, F_GETFL);

        if (flags < 0)
                return negative_errno();
        flags = nonblock ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
        if (fcntl(fd, F_SETFL, flags) < 0)
                return negative_errno();
        return 0;
}

int loop_write(int fd, const void *buf, size_t n) {
        const uint8_t *p = buf;

        assert(buf || n == 0);

        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

int loop_read_exact(int fd, void *buf, size_t n) {
        uint8_t *p = buf;

        assert(buf || n == 0);

        while (n > 0) {
                ssize_t k = read(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        return -EPIPE;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

int random_hex128(char ret[static SD_ID128_STRING_MAX]) {
        sd_id128_t id;
        int r;

        assert(ret);

        r = sd_id128_randomize(&id);
        if (r < 0)
                return r;
        (void) sd_id128_to_string(id, ret);
        return 0;
}

uint64_t now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

const char *signal_to_name(int sig) {
        static __thread char buf[16];
        const char *a;

        if (sig <= 0 || sig >= NSIG)
                return NULL;
        a = sigabbrev_np(sig);
        if (!a)
                return NULL;
        (void) snprintf(buf, sizeof buf, "SIG%s", a);
        return buf;
}

int getpeercred_fd(int fd, pid_t *ret_pid, uid_t *ret_uid, gid_t *ret_gid) {
        struct ucred uc;
        socklen_t l = sizeof uc;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) < 0)
                return negative_errno();
        if (l != sizeof uc || uc.pid <= 0)
                return -EIO;
        if (ret_pid)
                *ret_pid = uc.pid;
        if (ret_uid)
                *ret_uid = uc.uid;
        if (ret_gid)
                *ret_gid = uc.gid;
        return 0;
}

int read_full_stream(FILE *f, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, a = 0;

        assert(f);
        assert(ret);
        assert(ret_len);

        for (;;) {
                if (n == a) {
                        if (a >= max + 1)
                                return -EFBIG;
                        a = MIN(MAX(a * 2, (size_t) 65536), max + 1);
                        char *p = realloc(buf, a);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                }
                size_t k = fread(buf + n, 1, a - n, f);
                if (k == 0) {
                        if (ferror(f))
                                return -EIO;
                        break;
                }
                n += k;
        }
        if (n > max)
                return -EFBIG;
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        return 0;
}

char *format_bytes(uint64_t n, char buf[static FORMAT_BYTES_MAX]) {
        static const struct {
                uint64_t unit;
                const char *name;
        } units[] = {
                { UINT64_C(1) << 30, "GiB" },
                { UINT64_C(1) << 20, "MiB" },
                { UINT64_C(1) << 10, "KiB" },
        };

        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (n >= units[i].unit && n % units[i].unit == 0) {
                        (void) snprintf(buf, FORMAT_BYTES_MAX, "%" PRIu64 " %s", n / units[i].unit, units[i].name);
                        return buf;
                }
        (void) snprintf(buf, FORMAT_BYTES_MAX, "%" PRIu64 " bytes", n);
        return buf;
}
