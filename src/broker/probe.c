/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "probe.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "run-capture.h"
#include "run.h"
#include "syscall-filter.h"

#define PROBE_REPORT_MAX 4096

struct Probe {
        RunCapture *capture;
        /* Issue 42: a JIT's units (JavaScript) differ in W^X only (their
         * launcher's --jit): after the spec's own units pass, one more
         * probe proves theirs. The first capture stays until we are freed
         * (never freed in its own callback). */
        RunCapture *capture_first;
        bool jit_next;
        /* A unit that ended without its main process's exit (systemd knew
         * no ExecMainCode: it never ran, or was ended before it did) says
         * nothing about the sandbox: seen once under full load on Debian
         * 13. One more unit, once per probe; the verdict is still that of
         * a probe that ran. The capture stays, as capture_first does. */
        RunCapture *capture_retried;
        bool retried;
        sd_event *event;
        sd_bus *bus;
        SandboxSpec spec;
        probe_done_t done;
        void *userdata;
};

static const char *report_get(const char *report, const char *key, char *buf, size_t size) {
        size_t l;

        assert(key);
        assert(buf);

        l = strlen(key);
        for (const char *p = report; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strneq(p, key, l) && p[l] == '=') {
                        size_t n = strcspn(p + l + 1, "\n");
                        if (n >= size)
                                return NULL; /* never judge a cut-off value */
                        memcpy(buf, p + l + 1, n);
                        buf[n] = 0;
                        return buf;
                }
        return NULL;
}

static int failed(char **ret_failure, const char *fmt, ...) _printf_(2, 3);
static int failed(char **ret_failure, const char *fmt, ...) {
        va_list ap;

        assert(ret_failure);
        assert(fmt);

        va_start(ap, fmt);
        if (vasprintf(ret_failure, fmt, ap) < 0)
                *ret_failure = NULL;
        va_end(ap);
        return -EPERM;
}

static bool uid_ok(const char *v) {
        uint64_t x;
        /* A number, and not root's. */
        return v && parse_uint(v, &x) >= 0 && x != 0;
}

static bool limit_ok(const char *v, uint64_t want) {
        uint64_t x;
        /* "max" (v2) or a huge number (v1) means no limit at all. */
        return v && parse_uint(v, &x) >= 0 && x > 0 && x <= want;
}

/* What the launcher's probe tries (launch-probe.c): each must fail with EPERM. */
static const char *const denied_calls[] = { "io_uring_setup", "add_key", "perf_event_open" };

int probe_parse_systemd_version(const char *version, unsigned *ret) {
        char digits[16];
        uint64_t v;
        size_t n;

        assert(ret);

        n = version ? strspn(version, "0123456789") : 0;
        if (n == 0 || n >= sizeof digits)
                return -EINVAL;
        memcpy(digits, version, n);
        digits[n] = 0;
        if (parse_uint(digits, &v) < 0 || v == 0 || v > UINT_MAX)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int probe_systemd_version(sd_bus *bus, unsigned *ret) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *version = NULL;
        int r;

        assert(bus);
        assert(ret);

        r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "Version", &error, &version);
        sd_bus_error_free(&error);
        if (r < 0)
                return r;
        return probe_parse_systemd_version(version, ret);
}

/* What the running systemd gives beyond what every supported one does
 * (sandbox-properties.c), proven from inside. */
static int evaluate_processes(const char *report, const SandboxSpec *spec, char **ret_failure) {
        char v[256];
        const char *s;

        assert(spec);
        assert(ret_failure);

        /* Never assumed: a version we do not know could mean properties
         * that were not sent, or were sent and refused. */
        if (spec->systemd_version == 0)
                return failed(ret_failure, "systemd's version (what it enforces depends on it): PID 1 did not say");
        /* Every version: /proc shows no process of another uid. */
        s = report_get(report, "proc_others", v, sizeof v);
        if (!s || !streq(s, "0"))
                return failed(ret_failure, "hidden processes (ProtectProc=invisible): /proc lists %s of other users",
                              s ?: "unknown");
        if (!sandbox_private_pids(spec))
                return 0;
        /* systemd ignores PrivatePIDs= where the kernel has no PID
         * namespaces: the launcher must be PID 1, alone in /proc. */
        s = report_get(report, "pid", v, sizeof v);
        if (!s || !streq(s, "1"))
                return failed(ret_failure, "own PID namespace (PrivatePIDs=, systemd %u): the probe is PID %s, not 1",
                              spec->systemd_version, s ?: "unknown");
        s = report_get(report, "proc_pids", v, sizeof v);
        if (!s || !streq(s, "1"))
                return failed(ret_failure, "own PID namespace (PrivatePIDs=, systemd %u): /proc lists %s",
                              spec->systemd_version, s ?: "unknown");
        return 0;
}

/* Issue 41: the raw wheelhouse, whose bytes the store has not verified
 * (replaced since, or dropped in by hand), is out of every run's reach. */
static int evaluate_wheelhouse(const char *report, const SandboxSpec *spec, char **ret_failure) {
        char v[256];
        const char *s;

        assert(spec);
        assert(ret_failure);

        if (!spec->wheelhouse)
                return 0;
        s = report_get(report, "inaccessible", v, sizeof v);
        if (!s || !streq(s, "denied"))
                return failed(ret_failure, "the wheelhouse hidden from runs (InaccessiblePaths=%s): it is %s",
                              spec->wheelhouse, s ?: "unknown");
        return 0;
}

/* W^X (syscall-filter.h) in every unit but a JIT's (spec->jit: Node's
 * V8 writes the code it runs), where it must be absent: a unit that has
 * it would kill node at its first compiled function, one that has it
 * where it should not is not what the caller was told. */
static int evaluate_wx(const char *report, const SandboxSpec *spec, char **ret_failure) {
        static const char *const keys[] = { "wx_mmap", "wx_mprotect", "x_mprotect" };
        const char *want = spec->jit ? "ok" : "EPERM";
        char v[256], digest[17];
        const char *s;

        assert(spec);
        assert(ret_failure);

        if (syscall_filter_digest_wx(digest) < 0)
                return failed(ret_failure, "W^X filter: cannot build the expected program");
        s = report_get(report, "wx_filter", v, sizeof v);
        if (!s || !streq(s, spec->jit ? "-" : digest))
                return failed(ret_failure, "W^X filter (the launcher's%s): it loaded %s, expected %s",
                              spec->jit ? ", none with --jit" : "", s ?: "nothing", spec->jit ? "none" : digest);
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                s = report_get(report, keys[i], v, sizeof v);
                if (!s || !streq(s, want))
                        return failed(ret_failure, "%s (%s): %s is %s, expected %s",
                                      spec->jit ? "writable code for the JIT" : "W^X (the launcher's filter)",
                                      spec->jit ? "--jit" : "no --jit", keys[i], s ?: "unknown", want);
        }
        return 0;
}

int probe_evaluate(const char *report, const SandboxSpec *spec, char **ret_failure) {
        char v[256];
        const char *s;
        int r;

        assert(spec);
        assert(ret_failure);

        s = report_get(report, "uid", v, sizeof v);
        if (!uid_ok(s))
                return failed(ret_failure, "non-root uid (DynamicUser): the probe ran as uid %s", s ?: "unknown");
        s = report_get(report, "euid", v, sizeof v);
        if (!uid_ok(s))
                return failed(ret_failure, "non-root uid (DynamicUser): the probe ran with euid %s", s ?: "unknown");
        s = report_get(report, "netdevs", v, sizeof v);
        if (!s || !streq(s, "lo"))
                return failed(ret_failure, "network isolation (PrivateNetwork): interfaces visible: %s",
                              s ?: "unknown");
        s = report_get(report, "af_inet", v, sizeof v);
        if (!s || !streq(s, "blocked"))
                return failed(ret_failure,
                              "address families (RestrictAddressFamilies): AF_INET sockets can be created");
        s = report_get(report, "usr_readonly", v, sizeof v);
        if (!s || !streq(s, "1"))
                return failed(ret_failure, "read-only /usr (ProtectSystem=strict): /usr is writable");
        s = report_get(report, "etc_readonly", v, sizeof v);
        if (!s || !streq(s, "1"))
                return failed(ret_failure, "read-only /etc (ProtectSystem=strict): /etc is writable");
        s = report_get(report, "home_hidden", v, sizeof v);
        if (!s || !streq(s, "1"))
                return failed(ret_failure, "hidden /home and /root (ProtectHome): they are readable");
        s = report_get(report, "run_readonly", v, sizeof v);
        if (!s || !streq(s, "1"))
                return failed(ret_failure, "private /run (TemporaryFileSystem=/run:ro): /run is writable");
        /* Only systemd's own directory (PID 1's user records): any other entry
         * could hold a local IPC endpoint. */
        s = report_get(report, "run_entries", v, sizeof v);
        if (!s || !(streq(s, "systemd") || streq(s, "-")))
                return failed(ret_failure, "private /run (TemporaryFileSystem=/run:ro): /run holds %s", s ?: "unknown");
        /* systemd 252 lets PrivateTmp= (implied by DynamicUser=) win over
         * TemporaryFileSystem=/tmp: then /tmp is a directory on the host's
         * /tmp, without the size cap, shared with /var/tmp on the host disk. */
        s = report_get(report, "tmp_fs", v, sizeof v);
        if (!s || !streq(s, "tmpfs"))
                return failed(ret_failure, "private /tmp (a tmpfs of its own per run): /tmp is %s", s ?: "unknown");
        s = report_get(report, "tmp_bytes", v, sizeof v);
        /* (tmpfs rounds its size up to whole pages) */
        if (!limit_ok(s, (spec->tmp_size_max + 4095) & ~UINT64_C(4095)))
                return failed(ret_failure, "/tmp size cap (MCP_EXEC_TMP_SIZE_MAX=%" PRIu64 "): /tmp holds %s bytes",
                              spec->tmp_size_max, s ?: "unknown");
        {
                char w[256];
                const char *t = report_get(report, "tmp_dev", w, sizeof w);
                s = report_get(report, "var_tmp_dev", v, sizeof v);
                if (!s || !t || !streq(s, t))
                        return failed(ret_failure,
                                      "private /var/tmp (the run's own tmpfs): /var/tmp is another file system");
        }
        s = report_get(report, "memory_max", v, sizeof v);
        if (!limit_ok(s, spec->memory_max))
                return failed(ret_failure, "memory limit (MemoryMax=%" PRIu64 "): the cgroup reports %s",
                              spec->memory_max, s ?: "nothing");
        s = report_get(report, "tasks_max", v, sizeof v);
        if (!limit_ok(s, spec->tasks_max))
                return failed(ret_failure, "task limit (TasksMax=%" PRIu64 "): the cgroup reports %s", spec->tasks_max,
                              s ?: "nothing");
        s = report_get(report, "no_new_privs", v, sizeof v);
        if (!s || !streq(s, "1"))
                return failed(ret_failure, "NoNewPrivileges: not set");
        s = report_get(report, "seccomp", v, sizeof v);
        if (!s || !streq(s, "2"))
                return failed(ret_failure, "system call filter (the launcher's): seccomp mode %s", s ?: "unknown");
        /* The launcher's own filter (syscall-filter.h): the program this
         * broker's build has, and calls outside it fail with EPERM. */
        {
                char want[17];
                if (syscall_filter_digest(want) < 0)
                        return failed(ret_failure, "system call filter: cannot build the expected program");
                s = report_get(report, "seccomp_filter", v, sizeof v);
                if (!s || !streq(s, want))
                        return failed(ret_failure, "system call filter (the launcher's): it loaded %s, expected %s",
                                      s ?: "nothing", want);
        }
        for (size_t i = 0; i < ELEMENTSOF(denied_calls); i++) {
                const char *call = denied_calls[i];
                char key[64];
                (void) snprintf(key, sizeof key, "denied_%s", call);
                s = report_get(report, key, v, sizeof v);
                if (!s || !streq(s, "EPERM"))
                        return failed(ret_failure, "system call filter (the launcher's): %s() is not denied: %s", call,
                                      s ?: "unknown");
        }
        s = report_get(report, "cap_bounding", v, sizeof v);
        if (isempty(s) || strspn(s, "0") != strlen(s))
                return failed(ret_failure, "empty CapabilityBoundingSet: bounding set is %s", s ?: "unknown");
        r = evaluate_processes(report, spec, ret_failure);
        if (r >= 0)
                r = evaluate_wx(report, spec, ret_failure);
        return r < 0 ? r : evaluate_wheelhouse(report, spec, ret_failure);
}

static void on_capture_done(const char *output, const RunResult *res, void *userdata) {
        Probe *p = userdata;
        _cleanup_free_ char *failure = NULL;

        if (!p->retried && !res->error && res->signal == 0 && res->exit_code == -1 && !res->timed_out) {
                p->retried = true;
                log_struct(LOG_WARNING, "MESSAGE=Self-check unit ended without an exit status (Result=%s); once more",
                           res->unit_result ?: "unknown", "MCP_PROBE=%s", "retry");
                p->capture_retried = TAKE_PTR(p->capture);
                if (run_capture_start(p->event, p->bus, &p->spec, NULL, 0, PROBE_REPORT_MAX, on_capture_done, p,
                                      &p->capture) >= 0)
                        return;
        }

        if ((res->error || res->signal != 0 || res->exit_code != 0) && p->spec.wheelhouse &&
            access(p->spec.wheelhouse, F_OK) < 0 && errno == ENOENT)
                /* InaccessiblePaths= of a missing path fails every unit. */
                (void) asprintf(&failure,
                                "the wheelhouse hidden from runs (InaccessiblePaths=%s): it does not exist; make it "
                                "(mcp-exec wheels add, or mkdir -m 0755), or set MCP_EXEC_WHEELHOUSE= to turn "
                                "packages off",
                                p->spec.wheelhouse);
        else if (res->error)
                (void) asprintf(&failure, "sandbox setup: %s", res->error);
        else if (res->signal != 0 || res->exit_code != 0)
                (void) asprintf(&failure, "sandbox setup: the probe ended with %s %d",
                                res->signal ? "signal" : "status", res->signal ?: res->exit_code);
        else
                (void) probe_evaluate(output, &p->spec, &failure);
        if (failure && p->spec.jit) {
                char *f = NULL;
                if (asprintf(&f, "JavaScript units: %s", failure) >= 0) {
                        free(failure);
                        failure = f;
                }
        }
        if (!failure && p->jit_next) {
                p->jit_next = false;
                p->spec.jit = true;
                p->capture_first = TAKE_PTR(p->capture);
                if (run_capture_start(p->event, p->bus, &p->spec, NULL, 0, PROBE_REPORT_MAX, on_capture_done, p,
                                      &p->capture) >= 0)
                        return;
                failure = strdup("sandbox setup: the self-check of JavaScript units could not be started");
        }
        p->done(failure, p->userdata);
}

int probe_start(sd_event *e, sd_bus *bus, const SandboxSpec *spec, probe_done_t done, void *userdata, Probe **ret) {
        _cleanup_(probe_freep) Probe *p = NULL;
        int r;

        assert(spec);
        assert(done);
        assert(ret);

        p = new0(Probe, 1);
        if (!p)
                return -ENOMEM;
        p->event = e;
        p->bus = bus;
        p->spec = *spec;
        /* W^X units first, then (spec->jit) a JIT's. */
        p->jit_next = spec->jit;
        p->spec.jit = false;
        p->spec.probe = true;
        p->spec.description = SANDBOX_DESCRIPTION_PROBE;
        p->done = done;
        p->userdata = userdata;

        r = run_capture_start(e, bus, &p->spec, NULL, 0, PROBE_REPORT_MAX, on_capture_done, p, &p->capture);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

Probe *probe_free(Probe *p) {
        if (!p)
                return NULL;
        run_capture_free(p->capture);
        run_capture_free(p->capture_first);
        run_capture_free(p->capture_retried);
        free(p);
        return NULL;
}
