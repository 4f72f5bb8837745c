/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mcp-exec-launch --probe: what the sandbox looks like from inside, one
 * "key=value" line each, so that the broker can refuse to run code when a
 * property is not enforced (src/broker/probe.c judges the answers). */
#include "launch-probe.h"

#include <dirent.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dirent-util.h"
#include "launch-seccomp.h"
#include "macro.h"
#include "syscall-filter.h"

static void probe_netdevs(void) {
        _cleanup_(fclosep) FILE *f = NULL;
        char line[512];
        bool first = true;

        f = fopen("/proc/net/dev", "re");
        if (!f) {
                printf("netdevs=unknown\n");
                return;
        }
        printf("netdevs=");
        /* Two header lines, then "  name: counters". */
        for (unsigned n = 0; fgets(line, sizeof line, f); n++) {
                char *colon, *name = line;
                if (n < 2 || !(colon = strchr(line, ':')))
                        continue;
                *colon = 0;
                name += strspn(name, " ");
                printf("%s%s", first ? "" : ",", name);
                first = false;
        }
        printf("\n");
}

/* Finds this process's cgroup path for a v1 controller, or the v2 path when
 * ctrl is NULL. */
static int own_cgroup(const char *ctrl, char *ret, size_t size) {
        _cleanup_(fclosep) FILE *f = fopen("/proc/self/cgroup", "re");
        char line[PATH_MAX + 64];

        assert(ret);

        if (!f)
                return -errno;
        while (fgets(line, sizeof line, f)) {
                char *a = strchr(line, ':'), *b;
                if (!a || !(b = strchr(a + 1, ':')))
                        continue;
                *b = 0;
                b[strcspn(b + 1, "\n") + 1] = 0;
                if (ctrl ? streq(a + 1, ctrl) : isempty(a + 1)) {
                        (void) snprintf(ret, size, "%s", b + 1);
                        return 0;
                }
        }
        return -ENOENT;
}

static void probe_limit(const char *key, const char *ctrl, const char *v1_file, const char *v2_file) {
        char cg[PATH_MAX], path[PATH_MAX + 128], val[64] = "unknown";
        _cleanup_(fclosep) FILE *f = NULL;

        assert(key);
        assert(ctrl);
        assert(v1_file);
        assert(v2_file);

        if (own_cgroup(ctrl, cg, sizeof cg) >= 0) {
                (void) snprintf(path, sizeof path, "/sys/fs/cgroup/%s%s/%s", ctrl, streq(cg, "/") ? "" : cg, v1_file);
                f = fopen(path, "re");
        }
        if (!f && own_cgroup(NULL, cg, sizeof cg) >= 0) {
                (void) snprintf(path, sizeof path, "/sys/fs/cgroup%s/%s", streq(cg, "/") ? "" : cg, v2_file);
                f = fopen(path, "re");
        }
        if (f && fgets(val, sizeof val, f))
                val[strcspn(val, "\n")] = 0;
        printf("%s=%s\n", key, val);
}

static void probe_status_field(const char *key, const char *field) {
        _cleanup_(fclosep) FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        size_t l;

        assert(key);
        assert(field);

        l = strlen(field);

        while (f && fgets(line, sizeof line, f))
                if (strneq(line, field, l) && line[l] == ':') {
                        char *v = line + l + 1;
                        v += strspn(v, " \t");
                        v[strcspn(v, "\n")] = 0;
                        printf("%s=%s\n", key, v);
                        return;
                }
        printf("%s=unknown\n", key);
}

static bool dir_hidden(const char *p) {
        /* ProtectHome=yes leaves an inaccessible or empty directory. */
        struct dirent *de;
        bool empty = true;
        DIR *d;

        assert(p);

        d = opendir(p);
        if (!d)
                return true;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        empty = false;
        (void) closedir(d);
        return empty;
}

static int path_readonly(const char *p) {
        struct statvfs sv;

        assert(p);
        return statvfs(p, &sv) >= 0 && (sv.f_flag & ST_RDONLY) ? 1 : 0;
}

/* run_entries=what /run holds at its top, comma-separated ("-" when empty or
 * unreadable): the run's own empty tmpfs has nothing but systemd's. */
static void probe_run_entries(void) {
        DIR *d = opendir("/run");
        struct dirent *de;
        size_t n = 0;

        printf("run_entries=");
        if (d) {
                while ((de = readdir(d)) && n < 32) {
                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        /* A name that is not plain is only counted, never echoed. */
                        size_t l = strlen(de->d_name);
                        bool plain = l <= 64 &&
                                     strspn(de->d_name,
                                            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == l;
                        printf("%s%s", n++ ? "," : "", plain ? de->d_name : "?");
                }
                (void) closedir(d);
        }
        printf("%s\n", n ? "" : "-");
}

/* KEY_fs=tmpfs|other, KEY_bytes=size of the file system, KEY_dev=its device:
 * /tmp and /var/tmp must be the run's own capped tmpfs, not the host's. */
static void probe_tmp(const char *key, const char *path) {
        struct statfs fs;
        struct stat st;

        assert(key);
        assert(path);

        if (statfs(path, &fs) < 0 || stat(path, &st) < 0) {
                printf("%s_fs=missing\n", key);
                return;
        }
        printf("%s_fs=%s\n", key, fs.f_type == 0x01021994 /* TMPFS_MAGIC */ ? "tmpfs" : "other");
        printf("%s_bytes=%llu\n", key, (unsigned long long) fs.f_blocks * (unsigned long long) fs.f_bsize);
        printf("%s_dev=%llu\n", key, (unsigned long long) st.st_dev);
}

/* denied_NAME=EPERM|ok|errno NAME: calls that fail otherwise, without the
 * filter with another error (bad arguments: nothing happens either way),
 * with it with EPERM. seccomp_filter= the digest of the program this
 * launcher loaded at its start (launch-seccomp.h). */
static void probe_filter(void) {
        static const struct {
                const char *name;
                long nr;
        } calls[] = {
                { "io_uring_setup", SYS_io_uring_setup },       /* denied on top of @system-service */
                { "add_key", SYS_add_key },                     /* @keyring */
                { "perf_event_open", SYS_perf_event_open },     /* not in @system-service */
        };
        char digest[17];

        printf("seccomp_filter=%s\n", syscall_filter_digest(digest) >= 0 ? digest : "unknown");
        for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
                long r = syscall(calls[i].nr, 0, NULL, 0, -1, 0, 0);
                printf("denied_%s=%s\n", calls[i].name, r >= 0 ? "ok" : errno == EPERM ? "EPERM" : "other");
        }
}

/* wx_filter=the W^X program's digest, or "-" when this launcher did not
 * load it (--jit); wx_mmap=, wx_mprotect=, x_mprotect=EPERM|ok|other:
 * an anonymous mapping writable and executable at once, one made so
 * afterwards, and one written and then made executable (syscall-filter.h). */
static void probe_wx(void) {
        char digest[17];
        void *p;

        if (!launch_seccomp_wx_loaded())
                printf("wx_filter=-\n");
        else
                printf("wx_filter=%s\n", syscall_filter_digest_wx(digest) >= 0 ? digest : "unknown");
        p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        printf("wx_mmap=%s\n", p != MAP_FAILED ? "ok" : errno == EPERM ? "EPERM" : "other");
        if (p != MAP_FAILED)
                (void) munmap(p, 4096);
        p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
                printf("wx_mprotect=other\nx_mprotect=other\n");
                return;
        }
        *(volatile char *) p = (char) 0xc3;
        printf("wx_mprotect=%s\n", mprotect(p, 4096, PROT_READ | PROT_WRITE | PROT_EXEC) >= 0 ? "ok" :
                                   errno == EPERM ? "EPERM" : "other");
        printf("x_mprotect=%s\n", mprotect(p, 4096, PROT_READ | PROT_EXEC) >= 0 ? "ok" :
                                  errno == EPERM ? "EPERM" : "other");
        (void) munmap(p, 4096);
}

/* Whom the run can see: its own PID and every process /proc lists, and how
 * many of those are another uid's. ProtectProc=invisible hides those of
 * other uids (each run has a uid of its own); PrivatePIDs= (systemd >= 257)
 * makes the launcher PID 1 of a namespace of the run's own, whose /proc
 * lists nobody else at all. */
static void probe_processes(void) {
        _cleanup_(closedirp) DIR *d = opendir("/proc");
        unsigned n = 0, others = 0;
        struct dirent *de;

        printf("pid=%d\n", (int) getpid());
        if (!d) {
                printf("proc_pids=unknown\nproc_others=unknown\n");
                return;
        }
        printf("proc_pids=");
        while ((de = readdir(d))) {
                struct stat st;

                if (!de->d_name[0] || strspn(de->d_name, "0123456789") != strlen(de->d_name))
                        continue;
                /* At most a few: the probe runs alone. */
                if (n < 16)
                        printf("%s%s", n ? "," : "", de->d_name);
                n++;
                if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || st.st_uid != getuid())
                        others++;
        }
        printf("%s\nproc_others=%u\n", n ? (n > 16 ? ",..." : "") : "-", others);
}

/* inaccessible=denied|readable|absent|other: the raw wheelhouse (issue 41)
 * as the run finds it. denied: InaccessiblePaths='s node (a directory of
 * mode 0000 the run's uid cannot open) is there, and neither the directory
 * nor its manifest opens. */
static void probe_inaccessible(const char *path) {
        _cleanup_free_ char *manifest = NULL;
        struct stat st;
        int fd;

        if (!path) {
                printf("inaccessible=-\n");
                return;
        }
        if (stat(path, &st) < 0) {
                printf("inaccessible=%s\n", errno == ENOENT ? "absent" : "other");
                return;
        }
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
                (void) close(fd);
                printf("inaccessible=readable\n");
                return;
        }
        if (errno != EACCES && errno != EPERM) {
                printf("inaccessible=other\n");
                return;
        }
        if (asprintf(&manifest, "%s/SHA256SUMS", path) < 0) {
                printf("inaccessible=other\n");
                return;
        }
        fd = open(manifest, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                (void) close(fd);
                printf("inaccessible=readable\n");
                return;
        }
        printf("inaccessible=%s\n", S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0 ? "denied" : "other");
}

int launch_probe(const char *inaccessible) {
        int s;

        printf("uid=%u\n", (unsigned) getuid());
        printf("euid=%u\n", (unsigned) geteuid());
        probe_netdevs();
        s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        printf("af_inet=%s\n", s < 0 ? "blocked" : "allowed");
        if (s >= 0)
                (void) close(s);
        printf("usr_readonly=%d\n", path_readonly("/usr"));
        printf("etc_readonly=%d\n", path_readonly("/etc"));
        printf("home_hidden=%d\n", dir_hidden("/home") && dir_hidden("/root") ? 1 : 0);
        printf("run_readonly=%d\n", path_readonly("/run"));
        probe_run_entries();
        probe_tmp("tmp", "/tmp");
        probe_tmp("var_tmp", "/var/tmp");
        probe_limit("memory_max", "memory", "memory.limit_in_bytes", "memory.max");
        probe_limit("tasks_max", "pids", "pids.max", "pids.max");
        probe_status_field("no_new_privs", "NoNewPrivs");
        probe_status_field("seccomp", "Seccomp");
        probe_filter();
        probe_wx();
        probe_status_field("cap_bounding", "CapBnd");
        probe_status_field("cap_effective", "CapEff");
        probe_processes();
        probe_inaccessible(inaccessible);
        return fflush(stdout) == 0 ? 0 : LAUNCH_EXIT_FAILED;
}

