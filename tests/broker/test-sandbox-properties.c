/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit test for sandbox_append_properties() in src/broker/sandbox-properties.c:
 * builds a StartTransientUnit call, reads the a(sv) back and checks the fixed
 * property set entry by entry.
 *
 * sd_bus_message_new_method_call() refuses a bus fresh from sd_bus_new()
 * (-ENOTCONN). A bus started on one end of a socketpair whose other end never
 * answers is enough: it stays in the authentication phase, nothing is ever
 * sent to a real bus, and messages can be built, sealed and read back. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "sandbox-properties.h"
#include "test-helpers.h"

#define LAUNCHER "/usr/libexec/mcp-exec/mcp-exec-launch"
#define BOOTSTRAP "/usr/libexec/mcp-exec/mcp-exec-bootstrap.py"
#define PYTHON "/usr/bin/python3.11"
#define CANARY "CANARY-1d6a3f0e-appears-nowhere"
#define SECRET "SECRET-7c2b9e41-in-the-daemon-environment"

typedef struct Prop {
        char *name;
        char *sig;      /* the variant's signature */
        char *value;    /* rendered, see render() */
} Prop;

typedef struct Props {
        Prop *p;
        size_t n;
} Props;

static void props_free(Props *ps) {
        for (size_t i = 0; i < ps->n; i++) {
                free(ps->p[i].name);
                free(ps->p[i].sig);
                free(ps->p[i].value);
        }
        free(ps->p);
        *ps = (Props) {};
}

static const Prop *props_get(const Props *ps, const char *name) {
        for (size_t i = 0; i < ps->n; i++)
                if (strcmp(ps->p[i].name, name) == 0)
                        return ps->p + i;
        return NULL;
}

static int render_seq(sd_bus_message *m, FILE *f);

/* One value as text: booleans true/false, numbers in decimal, strings as
 * they are, arrays [a,b], structs (a,b), dict entries {k,v}, variants
 * <sig:value>, fds as fd:DEV:INO of the file they refer to. */
static int render_one(sd_bus_message *m, FILE *f, char type, const char *contents) {
        union {
                int b;
                uint8_t y;
                int16_t n;
                uint16_t q;
                int32_t i;
                uint32_t u;
                int64_t x;
                uint64_t t;
                double d;
                const char *s;
                int h;
        } v;
        int r;

        switch (type) {
        case SD_BUS_TYPE_ARRAY:
        case SD_BUS_TYPE_STRUCT:
        case SD_BUS_TYPE_DICT_ENTRY:
        case SD_BUS_TYPE_VARIANT: {
                const char *open = type == 'a' ? "[" : type == 'r' ? "(" : type == 'e' ? "{" : "<";
                const char *close = type == 'a' ? "]" : type == 'r' ? ")" : type == 'e' ? "}" : ">";
                r = sd_bus_message_enter_container(m, type, contents);
                ASSERT_TRUE(r > 0);
                fputs(open, f);
                if (type == 'v')
                        fprintf(f, "%s:", contents);
                ASSERT_TRUE(render_seq(m, f) >= 0);
                fputs(close, f);
                ASSERT_TRUE(sd_bus_message_exit_container(m) >= 0);
                return 0;
        }
        default:
                break;
        }

        memset(&v, 0, sizeof v);
        r = sd_bus_message_read_basic(m, type, &v);
        ASSERT_TRUE(r > 0);
        switch (type) {
        case 'b': fputs(v.b ? "true" : "false", f); break;
        case 'y': fprintf(f, "%u", (unsigned) v.y); break;
        case 'n': fprintf(f, "%d", (int) v.n); break;
        case 'q': fprintf(f, "%u", (unsigned) v.q); break;
        case 'i': fprintf(f, "%" PRIi32, v.i); break;
        case 'u': fprintf(f, "%" PRIu32, v.u); break;
        case 'x': fprintf(f, "%" PRIi64, v.x); break;
        case 't': fprintf(f, "%" PRIu64, v.t); break;
        case 'd': fprintf(f, "%g", v.d); break;
        case 's':
        case 'o':
        case 'g': fputs(v.s, f); break;
        case 'h': {
                struct stat st;
                ASSERT_TRUE(fstat(v.h, &st) == 0);
                fprintf(f, "fd:%ju:%ju", (uintmax_t) st.st_dev, (uintmax_t) st.st_ino);
                break;
        }
        default:
                ASSERT_FAIL_("unexpected D-Bus type '%c'", type);
        }
        return 0;
}

static int render_seq(sd_bus_message *m, FILE *f) {
        bool first = true;

        for (;;) {
                const char *contents = NULL;
                char type = 0;
                int r = sd_bus_message_peek_type(m, &type, &contents);
                ASSERT_TRUE(r >= 0);
                if (r == 0)
                        return 0;
                if (!first)
                        fputc(',', f);
                first = false;
                render_one(m, f, type, contents);
        }
}

static char *fd_id(int fd) {
        struct stat st;
        char *s = NULL;

        ASSERT_TRUE(fstat(fd, &st) == 0);
        ASSERT_TRUE(asprintf(&s, "fd:%ju:%ju", (uintmax_t) st.st_dev, (uintmax_t) st.st_ino) > 0);
        return s;
}

static SandboxSpec base_spec(void) {
        /* Distinct odd values, so a swapped or mis-scaled field shows. */
        return (SandboxSpec) {
                .launcher = LAUNCHER,
                .bootstrap = BOOTSTRAP,
                .python = PYTHON,
                .max_code_bytes = 1048577,
                .timeout_usec = 12345678,
                .memory_max = 268435456,
                .tasks_max = 77,
                .cpu_quota_percent = 150,
                .file_size_max = 5242880,
                .tmp_size_max = 7340032,
                .slice = "mcp-exec.slice",
                .binds_to = "mcp-exec-brokerd.service",
                .run_id = "0123456789abcdef0123456789abcdef",
                .systemd_version = 252,
        };
}

typedef struct Fixture {
        sd_bus *bus;
        int peer;               /* the silent other end of the bus socket */
        int in[2], out[2], err;
} Fixture;

/* 0 on success, -errno if no bus can be had here (the test is skipped). */
static int fixture_init(Fixture *fx) {
        int sv[2], r;

        *fx = (Fixture) { .peer = -1, .err = -1, .in = { -1, -1 }, .out = { -1, -1 } };
        ASSERT_TRUE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        r = sd_bus_new(&fx->bus);
        if (r >= 0) {
                r = sd_bus_set_fd(fx->bus, sv[0], sv[0]);
                if (r >= 0)
                        sv[0] = -1; /* the bus owns it now */
        }
        if (r >= 0)
                r = sd_bus_start(fx->bus);
        if (r < 0) {
                fx->bus = sd_bus_close_unref(fx->bus);
                if (sv[0] >= 0)
                        (void) close(sv[0]);
                (void) close(sv[1]);
                return r;
        }
        fx->peer = sv[1];
        ASSERT_TRUE(pipe2(fx->in, O_CLOEXEC) == 0);
        ASSERT_TRUE(pipe2(fx->out, O_CLOEXEC) == 0);
        fx->err = open("/dev/null", O_WRONLY | O_CLOEXEC);
        ASSERT_TRUE(fx->err >= 0);
        return 0;
}

static void fixture_done(Fixture *fx) {
        fx->bus = sd_bus_close_unref(fx->bus);
        for (size_t i = 0; i < 2; i++) {
                ASSERT_TRUE(close(fx->in[i]) == 0);
                ASSERT_TRUE(close(fx->out[i]) == 0);
        }
        ASSERT_TRUE(close(fx->err) == 0);
        ASSERT_TRUE(close(fx->peer) == 0);
}

static sd_bus_message *new_start_call(Fixture *fx) {
        sd_bus_message *m = NULL;
        int r = sd_bus_message_new_method_call(fx->bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                               "org.freedesktop.systemd1.Manager", "StartTransientUnit");
        ASSERT_EQ_INT(r, 0);
        ASSERT_TRUE(sd_bus_message_append(m, "ss", "mcp-exec-run-test.service", "fail") >= 0);
        return m;
}

/* Builds StartTransientUnit as the broker does and reads the properties back. */
static void build(Fixture *fx, const SandboxSpec *s, Props *ret) {
        sd_bus_message *m = new_start_call(fx);
        const char *name = NULL, *unit = NULL, *mode = NULL;
        int r;

        ASSERT_TRUE(sd_bus_message_open_container(m, 'a', "(sv)") >= 0);
        r = sandbox_append_properties(m, s, s->probe ? fx->out[1] : fx->in[0]);
        ASSERT_EQ_INT(r, 0);
        ASSERT_TRUE(sd_bus_message_close_container(m) >= 0);
        ASSERT_TRUE(sd_bus_message_append(m, "a(sa(sv))", 0) >= 0);
        ASSERT_EQ_INT(sd_bus_message_seal(m, 1, 0), 0);

        /* The properties sit exactly where systemd expects them. */
        ASSERT_STREQ(sd_bus_message_get_signature(m, true), "ssa(sv)a(sa(sv))");

        ASSERT_TRUE(sd_bus_message_rewind(m, true) >= 0);
        ASSERT_TRUE(sd_bus_message_read(m, "ss", &unit, &mode) > 0);
        ASSERT_TRUE(sd_bus_message_enter_container(m, 'a', "(sv)") > 0);
        *ret = (Props) {};
        while ((r = sd_bus_message_enter_container(m, 'r', "sv")) > 0) {
                const char *contents = NULL;
                char type = 0, *buf = NULL;
                size_t len = 0;
                FILE *f;
                Prop *p;

                ASSERT_TRUE(sd_bus_message_read(m, "s", &name) > 0);
                ASSERT_TRUE(sd_bus_message_peek_type(m, &type, &contents) > 0);
                ASSERT_EQ_INT(type, 'v');
                ASSERT_TRUE(sd_bus_message_enter_container(m, 'v', contents) > 0);
                f = open_memstream(&buf, &len);
                ASSERT_TRUE(f);
                ASSERT_TRUE(render_seq(m, f) >= 0);
                ASSERT_TRUE(fclose(f) == 0);
                ASSERT_TRUE(sd_bus_message_exit_container(m) >= 0);
                ASSERT_TRUE(sd_bus_message_exit_container(m) >= 0);

                /* SystemCallFilter= alone comes twice: an allow list, then
                 * what is taken out of it again. */
                if (props_get(ret, name) && strcmp(name, "SystemCallFilter") == 0 &&
                    !props_get(ret, "SystemCallFilter~"))
                        name = "SystemCallFilter~";
                else if (props_get(ret, name))
                        ASSERT_FAIL_("property %s set twice", name);
                ret->p = realloc(ret->p, sizeof(Prop) * (ret->n + 1));
                ASSERT_TRUE(ret->p);
                p = ret->p + ret->n++;
                p->name = strdup(name);
                p->sig = strdup(contents);
                p->value = buf;
                ASSERT_TRUE(p->name && p->sig);
        }
        ASSERT_TRUE(r == 0);
        ASSERT_TRUE(sd_bus_message_exit_container(m) >= 0);
        sd_bus_message_unref(m);
}

static void expect_prop(const Props *ps, const char *name, const char *sig, const char *value) {
        const Prop *p = props_get(ps, name);

        if (!p)
                ASSERT_FAIL_("property %s missing", name);
        if (strcmp(p->sig, sig) != 0)
                ASSERT_FAIL_("property %s has type %s, expected %s", name, p->sig, sig);
        if (value && strcmp(p->value, value) != 0)
                ASSERT_FAIL_("property %s=%s, expected %s", name, p->value, value);
}

/* Every property this test knows about. A new one fails the test on
 * purpose: the set is meant to be fixed, so review it and add it here. */
static const char *const known_names[] = {
        "Description", "Type", "AddRef", "CollectMode", "Slice", "ExecStart",
        "StandardInputFileDescriptor", "StandardOutputFileDescriptor", "StandardInput", "StandardOutput",
        "StandardError",
        "Environment", "DynamicUser", "NoNewPrivileges", "RestrictSUIDSGID", "RemoveIPC", "PrivateNetwork",
        "PrivateTmp", "PrivateDevices", "PrivateIPC", "PrivateMounts", "ProtectKernelTunables",
        "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock", "ProtectHostname",
        "LockPersonality", "RestrictRealtime", "CPUAccounting", "MemoryAccounting", "TasksAccounting",
        "IgnoreSIGPIPE", "SendSIGKILL", "ProtectSystem", "ProtectHome", "ProtectProc", "WorkingDirectory",
        "KillMode", "OOMPolicy", "TemporaryFileSystem", "BindReadOnlyPaths", "CapabilityBoundingSet",
        "AmbientCapabilities", "RestrictNamespaces", "UMask", "RestrictAddressFamilies",
        "MemoryMax", "MemorySwapMax", "TasksMax",
        "CPUQuotaPerSecUSec", "RuntimeMaxUSec", "KillSignal", "TimeoutStopUSec", "LimitFSIZE", "LimitFSIZESoft",
        "LimitCORE", "LimitCORESoft", "BindsTo", "After", "BindPaths",
        /* Egress runs only (check_common() checks that). */
        "IPAddressDeny", "IPAddressAllow", "IPAccounting",
        /* systemd >= 257 only (test_private_pids()). */
        "PrivatePIDs",
        /* With a wheelhouse only (issue 41, check_common() checks that). */
        "InaccessiblePaths",
};

static void check_common(const Props *ps, const Fixture *fx, const SandboxSpec *s) {
        char *want = NULL, *id;

        for (size_t i = 0; i < ps->n; i++) {
                bool known = false;
                for (size_t k = 0; k < sizeof known_names / sizeof known_names[0]; k++)
                        known = known || strcmp(ps->p[i].name, known_names[k]) == 0;
                if (!known)
                        ASSERT_FAIL_("unexpected property %s=%s (if intended, review it and add it to this test)",
                                     ps->p[i].name, ps->p[i].value);
                /* Sanity: a string put nowhere appears nowhere, nor does a
                 * secret from the daemon's own environment. */
                ASSERT_TRUE(strstr(ps->p[i].value, CANARY) == NULL);
                ASSERT_TRUE(strstr(ps->p[i].value, SECRET) == NULL);
        }

        /* Identity and privileges. */
        expect_prop(ps, "DynamicUser", "b", "true");
        expect_prop(ps, "NoNewPrivileges", "b", "true");
        expect_prop(ps, "RestrictSUIDSGID", "b", "true");
        expect_prop(ps, "RemoveIPC", "b", "true");
        expect_prop(ps, "CapabilityBoundingSet", "t", "0");
        expect_prop(ps, "AmbientCapabilities", "t", "0");
        /* Namespaces and file system. */
        expect_prop(ps, "PrivateNetwork", "b", "true");
        expect_prop(ps, "PrivateTmp", "b", "true");
        expect_prop(ps, "PrivateDevices", "b", "true");
        expect_prop(ps, "PrivateIPC", "b", "true");
        expect_prop(ps, "PrivateMounts", "b", "true");
        expect_prop(ps, "ProtectSystem", "s", "strict");
        expect_prop(ps, "ProtectHome", "s", "yes");
        expect_prop(ps, "ProtectProc", "s", "invisible");
        expect_prop(ps, "ProtectKernelTunables", "b", "true");
        expect_prop(ps, "ProtectKernelModules", "b", "true");
        expect_prop(ps, "ProtectKernelLogs", "b", "true");
        expect_prop(ps, "ProtectControlGroups", "b", "true");
        expect_prop(ps, "ProtectClock", "b", "true");
        expect_prop(ps, "ProtectHostname", "b", "true");
        expect_prop(ps, "LockPersonality", "b", "true");
        expect_prop(ps, "RestrictRealtime", "b", "true");
        expect_prop(ps, "RestrictNamespaces", "t", "0"); /* no namespace type allowed */
        expect_prop(ps, "UMask", "u", "63");              /* 0077 */
        expect_prop(ps, "WorkingDirectory", "s", "/tmp");
        /* /dev/shm is a TemporaryFileSystem=; /tmp and /var/tmp are bound
         * from the run's own tmpfs, which mcp-exec-tmpfsd mounts before the
         * unit starts (PrivateTmp= would win over a TemporaryFileSystem=/tmp).
         * /run is an empty read-only tmpfs with nothing but PID 1's user
         * records bound in: no local IPC endpoint. */
        ASSERT_TRUE(asprintf(&want, "[(/dev/shm,mode=1777,size=%" PRIu64 ",nosuid,nodev),(/run,ro,mode=0755,nosuid,nodev,noexec),"
                             "(" SANDBOX_MPL_DIR ",mode=1777,size=32M,nosuid,nodev,noexec)]",
                             s->tmp_size_max) > 0);
        expect_prop(ps, "TemporaryFileSystem", "a(ss)", want);
        free(want);
        expect_prop(ps, "BindReadOnlyPaths", "a(ssbt)", "[(/run/systemd/userdb,/run/systemd/userdb,true,0)]");
        /* No "-": a missing tmpfs fails the unit instead of leaving the run
         * PrivateTmp='s uncapped directory. */
        ASSERT_TRUE(asprintf(&want, "[(/run/mcp-exec-tmp/%s,/tmp,false,0),(/run/mcp-exec-tmp/%s,/var/tmp,false,0)]",
                             s->run_id, s->run_id) > 0);
        expect_prop(ps, "BindPaths", "a(ssbt)", want);
        free(want);
        /* The raw wheelhouse, whenever one is configured (issue 41). */
        if (s->wheelhouse) {
                ASSERT_TRUE(asprintf(&want, "[%s]", s->wheelhouse) > 0);
                expect_prop(ps, "InaccessiblePaths", "as", want);
                free(want);
        } else
                ASSERT_TRUE(props_get(ps, "InaccessiblePaths") == NULL);
        /* Nothing runs outside the sandbox for it: no ExecStartPre=+ or
         * ExecStopPost=+ helper (known_names would catch one, too). */
        ASSERT_TRUE(props_get(ps, "ExecStartPreEx") == NULL);
        ASSERT_TRUE(props_get(ps, "ExecStopPostEx") == NULL);
        /* Network and system calls. */
        if (s->egress) {
                /* AF_INET for the launcher's proxy listener, nothing else;
                 * a firewall of localhost only, and accounting to see it. */
                expect_prop(ps, "RestrictAddressFamilies", "(bas)", "(true,[AF_UNIX,AF_INET])");
                expect_prop(ps, "IPAddressDeny", "a(iayu)", "[(2,[0,0,0,0],0),(10,[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],0)]");
                expect_prop(ps, "IPAddressAllow", "a(iayu)",
                            "[(2,[127,0,0,0],8),(10,[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1],128)]");
                expect_prop(ps, "IPAccounting", "b", "true");
        } else {
                expect_prop(ps, "RestrictAddressFamilies", "(bas)", "(true,[AF_UNIX])");
                ASSERT_TRUE(props_get(ps, "IPAddressDeny") == NULL);
                ASSERT_TRUE(props_get(ps, "IPAddressAllow") == NULL);
                ASSERT_TRUE(props_get(ps, "IPAccounting") == NULL);
        }
        /* Whatever the run: no network but lo. */
        expect_prop(ps, "PrivateNetwork", "b", "true");
        /* No system call filter of systemd's: the launcher loads it
         * (syscall-filter.h), which the self-check proves (test-probe). */
        ASSERT_TRUE(props_get(ps, "SystemCallFilter") == NULL);
        ASSERT_TRUE(props_get(ps, "SystemCallArchitectures") == NULL);
        ASSERT_TRUE(props_get(ps, "SystemCallErrorNumber") == NULL);

        /* Limits, from the spec. */
        ASSERT_TRUE(asprintf(&want, "%" PRIu64, s->memory_max) > 0);
        expect_prop(ps, "MemoryMax", "t", want);
        free(want);
        expect_prop(ps, "MemorySwapMax", "t", "0");
        ASSERT_TRUE(asprintf(&want, "%" PRIu64, s->tasks_max) > 0);
        expect_prop(ps, "TasksMax", "t", want);
        free(want);
        ASSERT_TRUE(asprintf(&want, "%" PRIu64, s->cpu_quota_percent * 10000) > 0);
        expect_prop(ps, "CPUQuotaPerSecUSec", "t", want);
        free(want);
        ASSERT_TRUE(asprintf(&want, "%" PRIu64, s->timeout_usec) > 0);
        expect_prop(ps, "RuntimeMaxUSec", "t", want);
        free(want);
        ASSERT_TRUE(asprintf(&want, "%" PRIu64, s->file_size_max) > 0);
        expect_prop(ps, "LimitFSIZE", "t", want);
        expect_prop(ps, "LimitFSIZESoft", "t", want);
        free(want);
        expect_prop(ps, "LimitCORE", "t", "0");
        expect_prop(ps, "LimitCORESoft", "t", "0");
        ASSERT_TRUE(asprintf(&want, "%d", SIGKILL) > 0);
        expect_prop(ps, "KillSignal", "i", want);
        free(want);
        expect_prop(ps, "KillMode", "s", "control-group");
        expect_prop(ps, "SendSIGKILL", "b", "true");
        expect_prop(ps, "TimeoutStopUSec", "t", NULL);
        expect_prop(ps, "OOMPolicy", "s", "stop");
        expect_prop(ps, "CPUAccounting", "b", "true");
        expect_prop(ps, "MemoryAccounting", "b", "true");
        expect_prop(ps, "TasksAccounting", "b", "true");
        expect_prop(ps, "IgnoreSIGPIPE", "b", "false");

        /* The unit itself. */
        expect_prop(ps, "Description", "s", s->description ?: SANDBOX_DESCRIPTION_RUN);
        expect_prop(ps, "Type", "s", "exec");
        expect_prop(ps, "AddRef", "b", "true");
        expect_prop(ps, "CollectMode", "s", "inactive-or-failed");
        expect_prop(ps, "Slice", "s", s->slice);

        /* The fd: the very file handed in. A run's stdin is the launcher's
         * control socket (the program's stdio comes with its run); the
         * launcher's own output goes to the journal. The probe reports on
         * its stdout. */
        if (s->probe) {
                expect_prop(ps, "StandardInput", "s", "null");
                id = fd_id(fx->out[1]);
                expect_prop(ps, "StandardOutputFileDescriptor", "h", id);
                ASSERT_TRUE(props_get(ps, "StandardInputFileDescriptor") == NULL);
        } else {
                id = fd_id(fx->in[0]);
                expect_prop(ps, "StandardInputFileDescriptor", "h", id);
                expect_prop(ps, "StandardOutput", "s", "journal");
                ASSERT_TRUE(props_get(ps, "StandardOutputFileDescriptor") == NULL);
        }
        free(id);
        expect_prop(ps, "StandardError", "s", "journal");

        /* A fresh environment: nothing of ours, in particular no MCP_EXEC_*
         * (the auth token) and nothing from the daemon's environment. */
        expect_prop(ps, "Environment", "as", NULL);
        {
                const char *v = props_get(ps, "Environment")->value;
                ASSERT_TRUE(v[0] == '[' && v[strlen(v) - 1] == ']');
                ASSERT_TRUE(strstr(v, "MCP_EXEC_") == NULL);
                ASSERT_CONTAINS(v, "PATH=/");
                ASSERT_TRUE(strstr(v, "LD_") == NULL);
                ASSERT_TRUE(strstr(v, "PYTHON") == NULL);
        }

        /* Bound to the broker, if it has a unit. */
        if (s->binds_to) {
                ASSERT_TRUE(asprintf(&want, "[%s]", s->binds_to) > 0);
                expect_prop(ps, "BindsTo", "as", want);
                expect_prop(ps, "After", "as", want);
                free(want);
        } else {
                ASSERT_TRUE(props_get(ps, "BindsTo") == NULL);
                ASSERT_TRUE(props_get(ps, "After") == NULL);
        }
}

TEST(test_run_properties) {
        SandboxSpec s = base_spec();
        Fixture fx;
        Props ps;
        char *want = NULL;

        ASSERT_EQ_INT(fixture_init(&fx), 0);
        build(&fx, &s, &ps);
        check_common(&ps, &fx, &s);

        /* argv is exactly the launcher with interpreter, bootstrap, code
         * limit and matplotlib's directory: the code itself comes later,
         * with the run, never here. */
        ASSERT_TRUE(asprintf(&want, "[(%s,[%s,--python=%s,--bootstrap=%s,--max-code-bytes=%" PRIu64
                                    ",--mpl-dir=" SANDBOX_MPL_DIR "],false)]",
                             LAUNCHER, LAUNCHER, PYTHON, BOOTSTRAP, s.max_code_bytes) > 0);
        expect_prop(&ps, "ExecStart", "a(sasb)", want);
        free(want);
        props_free(&ps);

        /* Other values come through as well: nothing is a constant. */
        s.memory_max = 16 << 20;
        s.tasks_max = 1;
        s.timeout_usec = 1;
        s.cpu_quota_percent = 1;
        s.file_size_max = 4096;
        s.tmp_size_max = 1 << 20;
        s.max_code_bytes = 1;
        s.python = "/usr/local/bin/python3.12";
        s.slice = "other.slice";
        s.binds_to = NULL;
        build(&fx, &s, &ps);
        check_common(&ps, &fx, &s);
        expect_prop(&ps, "ExecStart", "a(sasb)",
                    "[(" LAUNCHER ",[" LAUNCHER ",--python=/usr/local/bin/python3.12,--bootstrap=" BOOTSTRAP
                    ",--max-code-bytes=1,--mpl-dir=" SANDBOX_MPL_DIR "],false)]");
        props_free(&ps);

        /* A warm unit: the preload and the font cache, module names and our
         * own path only. */
        s.preload = "numpy,matplotlib.pyplot";
        s.mpl_cache = SANDBOX_CACHE_DIR "/fontlist-v330.json";
        s.description = SANDBOX_DESCRIPTION_WARM;
        build(&fx, &s, &ps);
        check_common(&ps, &fx, &s);
        expect_prop(&ps, "ExecStart", "a(sasb)",
                    "[(" LAUNCHER ",[" LAUNCHER ",--python=/usr/local/bin/python3.12,--bootstrap=" BOOTSTRAP
                    ",--max-code-bytes=1,--mpl-dir=" SANDBOX_MPL_DIR ",--preload=numpy,matplotlib.pyplot,--mpl-cache="
                    SANDBOX_CACHE_DIR "/fontlist-v330.json],false)]");
        props_free(&ps);

        fixture_done(&fx);
}

/* Issue 22: an egress run differs from a plain one in exactly these. */
TEST(test_egress_properties) {
        SandboxSpec s = base_spec();
        Fixture fx;
        Props plain, egress;
        size_t extra = 0;
        char *want = NULL;

        ASSERT_EQ_INT(fixture_init(&fx), 0);
        build(&fx, &s, &plain);
        check_common(&plain, &fx, &s);
        s.egress = true;
        build(&fx, &s, &egress);
        check_common(&egress, &fx, &s);

        /* The launcher is told, without a policy name (egressd has it). */
        ASSERT_TRUE(asprintf(&want, "[(%s,[%s,--egress,--python=%s,--bootstrap=%s,--max-code-bytes=%" PRIu64
                                    ",--mpl-dir=" SANDBOX_MPL_DIR "],false)]",
                             LAUNCHER, LAUNCHER, PYTHON, BOOTSTRAP, s.max_code_bytes) > 0);
        expect_prop(&egress, "ExecStart", "a(sasb)", want);
        free(want);

        /* Everything else is the same, entry by entry. */
        for (size_t i = 0; i < egress.n; i++) {
                const Prop *e = egress.p + i, *p = props_get(&plain, e->name);
                if (!p) {
                        extra++;
                        continue;
                }
                if (strcmp(e->name, "ExecStart") == 0 || strcmp(e->name, "RestrictAddressFamilies") == 0 ||
                    strstr(e->value, "fd:"))
                        continue;
                if (strcmp(e->value, p->value) != 0)
                        ASSERT_FAIL_("egress changes %s: %s, plain %s", e->name, e->value, p->value);
        }
        ASSERT_EQ_INT((int) extra, 3);
        ASSERT_EQ_INT((int) egress.n, (int) plain.n + 3);
        props_free(&plain);
        props_free(&egress);
        fixture_done(&fx);
}

/* Issue 42: a JIT's unit (JavaScript) differs in its launcher's --jit
 * alone, for its runs and its self-check: no property changes. */
TEST(test_jit_properties) {
        SandboxSpec s = base_spec();
        Fixture fx;
        Props plain, jit, probe;
        char *want = NULL;

        ASSERT_EQ_INT(fixture_init(&fx), 0);
        build(&fx, &s, &plain);
        ASSERT_TRUE(strstr(props_get(&plain, "ExecStart")->value, "--jit") == NULL);
        s.jit = true;
        build(&fx, &s, &jit);
        check_common(&jit, &fx, &s);
        ASSERT_TRUE(asprintf(&want, "[(%s,[%s,--jit,--python=%s,--bootstrap=%s,--max-code-bytes=%" PRIu64
                                    ",--mpl-dir=" SANDBOX_MPL_DIR "],false)]",
                             LAUNCHER, LAUNCHER, PYTHON, BOOTSTRAP, s.max_code_bytes) > 0);
        expect_prop(&jit, "ExecStart", "a(sasb)", want);
        free(want);
        ASSERT_EQ_INT((int) jit.n, (int) plain.n);
        for (size_t i = 0; i < jit.n; i++) {
                const Prop *j = jit.p + i, *p = props_get(&plain, j->name);
                ASSERT_TRUE(p);
                if (strcmp(j->name, "ExecStart") == 0 || strstr(j->value, "fd:"))
                        continue;
                if (strcmp(j->value, p->value) != 0)
                        ASSERT_FAIL_("--jit changes %s: %s, plain %s", j->name, j->value, p->value);
        }
        s.probe = true;
        build(&fx, &s, &probe);
        expect_prop(&probe, "ExecStart", "a(sasb)", "[(" LAUNCHER ",[" LAUNCHER ",--jit,--probe],false)]");
        props_free(&plain);
        props_free(&jit);
        props_free(&probe);
        fixture_done(&fx);
}

/* Issue 23: with packages on, every unit that runs code has the operator's
 * package store in its launcher's argv, and nothing else changes: no property
 * (runs see it read-only through ProtectSystem=strict). Issue 41: the raw
 * wheelhouse is InaccessiblePaths= for every unit, the probe's included, and
 * the probe is told to prove it. */
TEST(test_wheelhouse_properties) {
        static const struct {
                bool session, egress;
                const char *preload, *mpl_cache, *flags, *tail;
        } units[] = {
                { .flags = "", .tail = "" },    /* a cold run */
                { .preload = "numpy", .mpl_cache = SANDBOX_CACHE_DIR "/fontlist.json", .flags = "",
                  .tail = ",--preload=numpy,--mpl-cache=" SANDBOX_CACHE_DIR "/fontlist.json" },   /* a warm unit */
                { .session = true, .flags = "--session,", .tail = "" },
                { .session = true, .egress = true, .preload = "numpy", .mpl_cache = SANDBOX_CACHE_DIR "/fontlist.json",
                  .flags = "--session,--egress,",
                  .tail = ",--preload=numpy,--mpl-cache=" SANDBOX_CACHE_DIR "/fontlist.json" },
        };
        Fixture fx;

        ASSERT_EQ_INT(fixture_init(&fx), 0);
        for (size_t u = 0; u < ELEMENTSOF(units); u++) {
                SandboxSpec s = base_spec();
                Props plain, wheels;
                char *want = NULL;

                s.session = units[u].session;
                s.egress = units[u].egress;
                s.preload = units[u].preload;
                s.mpl_cache = units[u].mpl_cache;
                build(&fx, &s, &plain);
                s.package_store = "/srv/wheel house";
                build(&fx, &s, &wheels);
                check_common(&wheels, &fx, &s);

                /* One argument, whole (no shell: a space is no split). */
                ASSERT_TRUE(asprintf(&want, "[(%s,[%s,%s--python=%s,--bootstrap=%s,--max-code-bytes=%" PRIu64
                                            ",--mpl-dir=" SANDBOX_MPL_DIR ",--wheelhouse=/srv/wheel house%s],false)]",
                                     LAUNCHER, LAUNCHER, units[u].flags, PYTHON, BOOTSTRAP, s.max_code_bytes,
                                     units[u].tail) > 0);
                expect_prop(&wheels, "ExecStart", "a(sasb)", want);
                free(want);
                ASSERT_TRUE(strstr(props_get(&plain, "ExecStart")->value, "--wheelhouse") == NULL);

                ASSERT_EQ_INT((int) wheels.n, (int) plain.n);
                for (size_t i = 0; i < wheels.n; i++) {
                        const Prop *w = wheels.p + i, *p = props_get(&plain, w->name);
                        ASSERT_TRUE(p);
                        if (strcmp(w->name, "ExecStart") == 0 || strstr(w->value, "fd:"))
                                continue;
                        if (strcmp(w->value, p->value) != 0)
                                ASSERT_FAIL_("the wheelhouse changes %s: %s, plain %s", w->name, w->value, p->value);
                }
                props_free(&plain);
                props_free(&wheels);
        }

        /* The probe checks the sandbox, not what runs install: no store. */
        {
                SandboxSpec s = base_spec();
                Props probe;

                s.probe = true;
                s.package_store = "/srv/wheel house";
                build(&fx, &s, &probe);
                expect_prop(&probe, "ExecStart", "a(sasb)", "[(" LAUNCHER ",[" LAUNCHER ",--probe],false)]");
                props_free(&probe);
        }
        fixture_done(&fx);
}

/* Issue 41: the raw wheelhouse is denied to every unit (a run, a warm unit, a
 * session, the probe), as one more property and nothing else changed but
 * the probe's argument to prove it. */
TEST(test_wheelhouse_denied) {
        static const struct {
                bool session, egress, probe;
        } units[] = { { .session = false }, { .session = true }, { .session = true, .egress = true },
                      { .probe = true } };
        Fixture fx;

        ASSERT_EQ_INT(fixture_init(&fx), 0);
        for (size_t u = 0; u < ELEMENTSOF(units); u++) {
                SandboxSpec s = base_spec();
                Props plain, denied;

                s.session = units[u].session;
                s.egress = units[u].egress;
                s.probe = units[u].probe;
                build(&fx, &s, &plain);
                ASSERT_TRUE(!props_get(&plain, "InaccessiblePaths"));
                s.wheelhouse = "/srv/raw wheels";
                build(&fx, &s, &denied);
                check_common(&denied, &fx, &s);
                /* No "-": a missing wheelhouse fails the unit, never shows up later. */
                expect_prop(&denied, "InaccessiblePaths", "as", "[/srv/raw wheels]");
                ASSERT_EQ_INT((int) denied.n, (int) plain.n + 1);
                if (s.probe)
                        expect_prop(&denied, "ExecStart", "a(sasb)",
                                    "[(" LAUNCHER ",[" LAUNCHER ",--probe,--wheelhouse=/srv/raw wheels],false)]");
                else
                        ASSERT_STREQ(props_get(&denied, "ExecStart")->value, props_get(&plain, "ExecStart")->value);
                for (size_t i = 0; i < plain.n; i++) {
                        const Prop *p = plain.p + i, *d = props_get(&denied, p->name);
                        ASSERT_TRUE(d);
                        if (strcmp(p->name, "ExecStart") == 0 || strstr(p->value, "fd:"))
                                continue;
                        if (strcmp(d->value, p->value) != 0)
                                ASSERT_FAIL_("denying the wheelhouse changes %s: %s, plain %s", p->name, d->value,
                                             p->value);
                }
                props_free(&plain);
                props_free(&denied);
        }
        fixture_done(&fx);
}

TEST(test_probe_properties) {
        SandboxSpec s = base_spec();
        Fixture fx;
        Props run, probe;

        ASSERT_EQ_INT(fixture_init(&fx), 0);
        build(&fx, &s, &run);
        s.probe = true;
        s.description = SANDBOX_DESCRIPTION_PROBE;
        build(&fx, &s, &probe);
        check_common(&probe, &fx, &s);
        expect_prop(&probe, "ExecStart", "a(sasb)", "[(" LAUNCHER ",[" LAUNCHER ",--probe],false)]");

        /* The probe checks the very same sandbox: every other property but the
         * text that names it is identical to a normal run's. */
        ASSERT_EQ_INT(probe.n, run.n);
        for (size_t i = 0; i < run.n; i++) {
                const Prop *p = props_get(&probe, run.p[i].name);
                if (strcmp(run.p[i].name, "ExecStart") == 0 || strcmp(run.p[i].name, "Description") == 0 ||
                    strncmp(run.p[i].name, "Standard", 8) == 0)
                        continue;
                ASSERT_TRUE(p);
                if (strcmp(p->value, run.p[i].value) != 0 || strcmp(p->sig, run.p[i].sig) != 0)
                        ASSERT_FAIL_("%s differs for the probe: %s vs %s", p->name, p->value, run.p[i].value);
        }
        props_free(&run);
        props_free(&probe);
        fixture_done(&fx);
}

TEST(test_private_pids) {
        /* Sent where the running systemd has it, and only there: 252
         * refuses a property it does not know, and so every run. */
        static const struct {
                unsigned version;
                bool sent;
        } t[] = { { 0, false }, { 252, false }, { 256, false }, { 257, true }, { 258, true } };
        Fixture fx;

        ASSERT_EQ_INT(fixture_init(&fx), 0);
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                for (int probe = 0; probe <= 1; probe++) {
                        SandboxSpec s = base_spec();
                        Props ps;

                        s.systemd_version = t[i].version;
                        s.probe = probe;
                        s.session = !probe && t[i].version == 258;
                        build(&fx, &s, &ps);
                        if (t[i].sent)
                                expect_prop(&ps, "PrivatePIDs", "s", "yes");
                        else if (props_get(&ps, "PrivatePIDs"))
                                ASSERT_FAIL_("PrivatePIDs sent to systemd %u", t[i].version);
                        props_free(&ps);
                }
        fixture_done(&fx);
}

TEST(test_errors_propagate) {
        /* A message that can no longer be appended to: the error comes back. */
        SandboxSpec s = base_spec();
        Fixture fx;
        sd_bus_message *m;

        ASSERT_EQ_INT(fixture_init(&fx), 0);
        m = new_start_call(&fx);
        ASSERT_EQ_INT(sd_bus_message_seal(m, 1, 0), 0);
        ASSERT_TRUE(sandbox_append_properties(m, &s, fx.in[0]) < 0);
        sd_bus_message_unref(m);
        fixture_done(&fx);
}

int main(void) {
        Fixture probe_fx;
        int r;

        /* Secrets in the daemon's own environment must not reach the unit. */
        ASSERT_TRUE(setenv("MCP_EXEC_AUTH_TOKEN", SECRET, 1) == 0);
        ASSERT_TRUE(setenv("MCP_EXEC_TEST_SECRET", SECRET, 1) == 0);

        r = fixture_init(&probe_fx);
        if (r < 0) {
                fprintf(stderr, "cannot set up an sd-bus connection object here (%s), skipping\n", strerror(-r));
                return EXIT_TEST_SKIP;
        }
        fixture_done(&probe_fx);

        RUN(test_run_properties);
        RUN(test_egress_properties);
        RUN(test_jit_properties);
        RUN(test_wheelhouse_properties);
        RUN(test_wheelhouse_denied);
        RUN(test_probe_properties);
        RUN(test_private_pids);
        RUN(test_errors_propagate);
        return 0;
}
