/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sandbox-properties.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

static int append_bool(sd_bus_message *m, const char *name, int b) {
        return sd_bus_message_append(m, "(sv)", name, "b", b);
}

static int append_u64(sd_bus_message *m, const char *name, uint64_t v) {
        return sd_bus_message_append(m, "(sv)", name, "t", v);
}

/* Issue 42 (launch-lang.h): another language's interpreter and bootstrap;
 * no matplotlib, no packages. Each buffer 4096 bytes (max: 64). */
static int append_lang_argv(const SandboxSpec *s, const char **argv, size_t *n, char *interp, char *boot, char *max,
                            char *lang) {
        if (!s->bootstrap || !s->interpreter || !language_to_string(s->language))
                return -EINVAL;
        (void) snprintf(interp, 4096, "--interpreter=%s", s->interpreter);
        (void) snprintf(boot, 4096, "--bootstrap=%s", s->bootstrap);
        (void) snprintf(max, 64, "--max-code-bytes=%" PRIu64, s->max_code_bytes);
        (void) snprintf(lang, 4096, "--language=%s", language_to_string(s->language));
        if (s->session)
                argv[(*n)++] = "--session";
        if (s->egress)
                argv[(*n)++] = "--egress";
        argv[(*n)++] = lang;
        argv[(*n)++] = interp;
        argv[(*n)++] = boot;
        argv[(*n)++] = max;
        return 0;
}

/* ExecStart=: launcher with argv[0..n). */
static int append_exec_start(sd_bus_message *m, const char *launcher, const char *const *argv, size_t n) {
        int r;

        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "ExecStart");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "a(sasb)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sasb)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'r', "sasb");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", launcher);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "s");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(m, "s", argv[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append(m, "b", 0);
        for (unsigned i = 0; r >= 0 && i < 4; i++)
                r = sd_bus_message_close_container(m);
        return r;
}

/* What runs, with which stdio and environment. */
static int append_exec(sd_bus_message *m, const SandboxSpec *s, int control_fd) {
        char arg_python[4096], arg_boot[4096], arg_max[64], arg_preload[4096], arg_cache[4096], arg_wheels[4096],
                arg_denied[4096];
        const char *argv[12];
        size_t n = 0;
        int r;

        r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)",
                                  "Description", "s", s->description ?: SANDBOX_DESCRIPTION_RUN,
                                  "Type", "s", "exec",
                                  "AddRef", "b", 1,
                                  "CollectMode", "s", "inactive-or-failed",
                                  "Slice", "s", s->slice);
        if (r < 0)
                return r;

        argv[n++] = s->launcher;
        /* Before --probe: the probe proves what its unit's runs get. */
        if (s->jit)
                argv[n++] = "--jit";
        if (s->probe) {
                argv[n++] = "--probe";
                /* The raw wheelhouse, to prove unreadable (a run's is the store). */
                if (s->wheelhouse) {
                        (void) snprintf(arg_denied, sizeof arg_denied, "--wheelhouse=%s", s->wheelhouse);
                        argv[n++] = arg_denied;
                }
        } else if (s->language != LANGUAGE_PYTHON) {
                r = append_lang_argv(s, argv, &n, arg_python, arg_boot, arg_max, arg_preload);
                if (r < 0)
                        return r;
        } else {
                if (!s->bootstrap)
                        return -EINVAL;
                (void) snprintf(arg_python, sizeof arg_python, "--python=%s", s->python);
                (void) snprintf(arg_boot, sizeof arg_boot, "--bootstrap=%s", s->bootstrap);
                (void) snprintf(arg_max, sizeof arg_max, "--max-code-bytes=%" PRIu64, s->max_code_bytes);
                if (s->session)
                        argv[n++] = "--session";
                /* No policy name: egressd has it, the launcher only forwards. */
                if (s->egress)
                        argv[n++] = "--egress";
                argv[n++] = arg_python;
                argv[n++] = arg_boot;
                argv[n++] = arg_max;
                argv[n++] = "--mpl-dir=" SANDBOX_MPL_DIR;
                /* The operator's path, never a caller's: what a run may
                 * install from (its specs come with the run): the store,
                 * never the raw wheelhouse (issue 41). */
                if (s->package_store) {
                        (void) snprintf(arg_wheels, sizeof arg_wheels, "--wheelhouse=%s", s->package_store);
                        argv[n++] = arg_wheels;
                }
                /* Module names and a path of ours: never anything of a caller's. */
                if (s->preload) {
                        (void) snprintf(arg_preload, sizeof arg_preload, "--preload=%s", s->preload);
                        argv[n++] = arg_preload;
                }
                if (s->mpl_cache) {
                        (void) snprintf(arg_cache, sizeof arg_cache, "--mpl-cache=%s", s->mpl_cache);
                        argv[n++] = arg_cache;
                }
        }
        assert(n <= ELEMENTSOF(argv));

        r = append_exec_start(m, s->launcher, argv, n);
        if (r < 0)
                return r;

        if (s->probe)
                r = sd_bus_message_append(m, "(sv)(sv)(sv)",
                                          "StandardInput", "s", "null",
                                          "StandardOutputFileDescriptor", "h", control_fd,
                                          "StandardError", "s", "journal");
        else
                r = sd_bus_message_append(m, "(sv)(sv)(sv)",
                                          "StandardInputFileDescriptor", "h", control_fd,
                                          "StandardOutput", "s", "journal",
                                          "StandardError", "s", "journal");
        if (r < 0)
                return r;

        /* Built from nothing: the daemon's environment (token included) never
         * reaches the code. The launcher builds the interpreter's again. */
        return sd_bus_message_append(m, "(sv)", "Environment", "as", 4,
                                     "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8");
}

/* Identity, namespaces and the kernel surfaces the code may not touch. */
static int append_protections(sd_bus_message *m, const SandboxSpec *s) {
        static const struct {
                const char *name;
                int value;
        } bools[] = {
                /* Identity: a fresh uid per run, released afterwards; no way up. */
                { "DynamicUser", 1 },
                { "NoNewPrivileges", 1 },
                { "RestrictSUIDSGID", 1 },
                { "RemoveIPC", 1 },
                /* Namespaces: no network but lo, own /tmp, /dev, IPC and mounts. */
                { "PrivateNetwork", 1 },
                { "PrivateTmp", 1 },
                { "PrivateDevices", 1 },
                { "PrivateIPC", 1 },
                { "PrivateMounts", 1 },
                /* Kernel surfaces the code has no business touching. */
                { "ProtectKernelTunables", 1 },
                { "ProtectKernelModules", 1 },
                { "ProtectKernelLogs", 1 },
                { "ProtectControlGroups", 1 },
                { "ProtectClock", 1 },
                { "ProtectHostname", 1 },
                { "LockPersonality", 1 },
                { "RestrictRealtime", 1 },
                /* Accounting, so results can report CPU and memory. */
                { "CPUAccounting", 1 },
                { "MemoryAccounting", 1 },
                { "TasksAccounting", 1 },
                /* Child processes get the default SIGPIPE, as in a shell. */
                { "IgnoreSIGPIPE", 0 },
                { "SendSIGKILL", 1 },
        };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(bools); i++) {
                r = append_bool(m, bools[i].name, bools[i].value);
                if (r < 0)
                        return r;
        }
        /* Where systemd has it (257), a PID namespace of the run's own: it
         * sees no other process at all, and the launcher is its PID 1
         * (which reaps orphans, launch-common.h). Older systemd refuses an
         * unknown property, so it is sent only there; below it, the run
         * still sees no other run's processes: ProtectProc=invisible hides
         * those of other uids, and DynamicUser= gives each run its own. */
        /* (A string on the bus: "no" or "yes".) */
        if (sandbox_private_pids(s)) {
                r = sd_bus_message_append(m, "(sv)", "PrivatePIDs", "s", "yes");
                if (r < 0)
                        return r;
        }

        return sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)",
                                     "ProtectSystem", "s", "strict",
                                     "ProtectHome", "s", "yes",
                                     "ProtectProc", "s", "invisible",
                                     "WorkingDirectory", "s", "/tmp",
                                     "KillMode", "s", "control-group",
                                     "OOMPolicy", "s", "stop");
}

/* The file system the code sees: /tmp, /var/tmp, /dev/shm and /run. */
static int append_file_systems(sd_bus_message *m, const SandboxSpec *s) {
        char tmp_opts[128], tmp_dir[sizeof(SANDBOX_TMP_ROOT "/") + 32];
        int r;

        (void) snprintf(tmp_opts, sizeof tmp_opts, "mode=1777,size=%" PRIu64 ",nosuid,nodev", s->tmp_size_max);

        /* The run's /tmp, /var/tmp and /dev/shm are tmpfs of its own: gone
         * with the run, capped, charged to its memory limit, invisible to
         * every other run. (PrivateDevices= alone would bind the host's
         * /dev/shm.) /tmp cannot be a TemporaryFileSystem=: DynamicUser=
         * implies PrivateTmp=, whose bind of a directory on the host's /tmp
         * wins over it (systemd 252), without the cap. A bind mount wins over
         * PrivateTmp=, so /tmp and /var/tmp are bound from a tmpfs that
         * mcp-exec-tmpfsd mounts before the broker starts the unit and
         * removes once the unit is gone (run.c). */
        /* /run is an empty read-only tmpfs: an allow-list instead of a deny-list
         * of the local IPC endpoints there (the system bus, the journal, ours,
         * users' sessions, local resolvers that would carry data out by DNS,
         * and whatever a third party puts in /run with mode 0666). Nothing
         * written there can outlive the run either. */
        /* matplotlib's config and cache directory must be writable, or it
         * warns and rebuilds its font cache in a temporary one on every
         * import; outside /tmp, so that a run's /tmp starts empty. */
        r = sd_bus_message_append(m, "(sv)", "TemporaryFileSystem", "a(ss)", 3, "/dev/shm", tmp_opts,
                                  "/run", "ro,mode=0755,nosuid,nodev,noexec",
                                  SANDBOX_MPL_DIR, "mode=1777,size=32M,nosuid,nodev,noexec");
        if (r < 0)
                return r;
        /* ... but for PID 1's read-only user records, so the run's dynamic uid
         * has a name (getpwuid(), as in any DynamicUser= service). */
        r = sd_bus_message_append(m, "(sv)", "BindReadOnlyPaths", "a(ssbt)", 1, "/run/systemd/userdb",
                                  "/run/systemd/userdb", 1, UINT64_C(0));
        if (r < 0)
                return r;
        /* The raw wheelhouse (issue 41): bytes replaced after the store
         * verified them, or a wheel dropped in by hand, never reach a run,
         * neither through pip nor read as files. No "-": a wheelhouse that
         * is missing fails the unit rather than appear in it later (made
         * while a warm unit or a session lives). The self-check proves the
         * run cannot read it (probe.c). */
        if (s->wheelhouse) {
                r = sd_bus_message_append(m, "(sv)", "InaccessiblePaths", "as", 1, s->wheelhouse);
                if (r < 0)
                        return r;
        }
        if (!s->run_id || strlen(s->run_id) != 32)
                return -EINVAL;
        (void) snprintf(tmp_dir, sizeof tmp_dir, SANDBOX_TMP_ROOT "/%s", s->run_id);
        /* A missing source fails the unit (no "-"): the tmpfs is there before
         * the unit is asked for, and if it went away since, the run must not
         * start on PrivateTmp='s uncapped directory. (The self-check verifies
         * /tmp too.) */
        return sd_bus_message_append(m, "(sv)", "BindPaths", "a(ssbt)", 2, tmp_dir, "/tmp", 0, UINT64_C(0),
                                     tmp_dir, "/var/tmp", 0, UINT64_C(0));
}

/* One IPAddressAllow=/IPAddressDeny= entry, a(iayu): family, address
 * bytes, prefix length. */
static int append_ip_prefix(sd_bus_message *m, int family, const uint8_t *addr, uint32_t prefix) {
        int r;

        r = sd_bus_message_open_container(m, 'r', "iayu");
        if (r >= 0)
                r = sd_bus_message_append(m, "i", (int32_t) family);
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'y', addr, family == AF_INET ? 4 : 16);
        if (r >= 0)
                r = sd_bus_message_append(m, "u", prefix);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

/* any: 0.0.0.0/0 and ::/0; localhost: 127.0.0.0/8 and ::1/128, as
 * systemd.resource-control(5) spells them. */
static int append_ip_list(sd_bus_message *m, const char *name, bool localhost) {
        static const uint8_t zero[16] = {}, v4_lo[4] = { 127, 0, 0, 0 },
                             v6_lo[16] = { [15] = 1 };
        int r;

        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", name);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "a(iayu)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(iayu)");
        if (r >= 0)
                r = append_ip_prefix(m, AF_INET, localhost ? v4_lo : zero, localhost ? 8 : 0);
        if (r >= 0)
                r = append_ip_prefix(m, AF_INET6, localhost ? v6_lo : zero, localhost ? 128 : 0);
        for (unsigned i = 0; r >= 0 && i < 3; i++)
                r = sd_bus_message_close_container(m);
        return r;
}

/* An egress run's network: the launcher's listener on 127.0.0.1 in the
 * run's own namespace (PrivateNetwork=: only lo) needs AF_INET. The IP
 * firewall is the belt: should the namespace ever have more than lo, only
 * localhost is reachable still. IP accounting makes the firewall's presence
 * visible (IPIngressBytes is UINT64_MAX without cgroup BPF), which the broker
 * checks before it hands over a run (fail closed). SocketBindAllow= would
 * be the way to allow only the launcher's bind, but needs systemd's BPF
 * framework, which Debian's systemd 252 lacks: the launcher's seccomp
 * filter does it for the interpreter instead. */
static int append_egress(sd_bus_message *m) {
        int r;

        r = append_ip_list(m, "IPAddressDeny", false);
        if (r >= 0)
                r = append_ip_list(m, "IPAddressAllow", true);
        if (r >= 0)
                r = append_bool(m, "IPAccounting", 1);
        return r;
}

/* Capabilities, address families and system calls. */
static int append_system_calls(sd_bus_message *m, const SandboxSpec *s) {
        int r;

        r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)",
                                  "CapabilityBoundingSet", "t", UINT64_C(0),
                                  "AmbientCapabilities", "t", UINT64_C(0),
                                  "RestrictNamespaces", "t", UINT64_C(0),
                                  "UMask", "u", (uint32_t) 0077);
        if (r < 0)
                return r;

        /* AF_INET only where the launcher listens for the proxy (egress):
         * never AF_INET6, AF_NETLINK, AF_PACKET. */
        if (s->egress)
                r = sd_bus_message_append(m, "(sv)", "RestrictAddressFamilies", "(bas)", 1, 2, "AF_UNIX", "AF_INET");
        else
                r = sd_bus_message_append(m, "(sv)", "RestrictAddressFamilies", "(bas)", 1, 1, "AF_UNIX");
        if (r < 0)
                return r;
        /* No SystemCallFilter=, SystemCallArchitectures= or
         * SystemCallErrorNumber=: the launcher loads the same rules,
         * compiled once (syscall-filter.h), as its first act, and the
         * self-check refuses runs unless it did (probe.c). */
        return 0;
}

static int append_limits(sd_bus_message *m, const SandboxSpec *s) {
        int r;

        /* Limits. KillSignal=SIGKILL: a timeout or cancel kills the whole
         * cgroup at once, setsid() and double-forked children included. */
        r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)",
                                  "MemoryMax", "t", s->memory_max,
                                  "MemorySwapMax", "t", UINT64_C(0),
                                  "TasksMax", "t", s->tasks_max,
                                  "CPUQuotaPerSecUSec", "t", sandbox_cpu_quota_usec(s->cpu_quota_percent),
                                  "RuntimeMaxUSec", "t", s->timeout_usec);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "(sv)(sv)", "KillSignal", "i", (int32_t) SIGKILL,
                                  "TimeoutStopUSec", "t", 5 * USEC_PER_SEC);
        if (r < 0)
                return r;
        if (s->cpu_weight > 0) {
                r = sd_bus_message_append(m, "(sv)", "CPUWeight", "t", s->cpu_weight);
                if (r < 0)
                        return r;
        }

        r = append_u64(m, "LimitFSIZE", s->file_size_max);
        if (r >= 0)
                r = append_u64(m, "LimitFSIZESoft", s->file_size_max);
        if (r >= 0)
                r = append_u64(m, "LimitCORE", 0);
        if (r >= 0)
                r = append_u64(m, "LimitCORESoft", 0);
        return r;
}

int sandbox_append_properties(sd_bus_message *m, const SandboxSpec *s, int control_fd) {
        int r;

        assert(m);
        assert(s);
        assert(control_fd >= 0);

        r = append_exec(m, s, control_fd);
        if (r < 0)
                return r;
        r = append_protections(m, s);
        if (r < 0)
                return r;
        r = append_file_systems(m, s);
        if (r < 0)
                return r;
        r = append_system_calls(m, s);
        if (r < 0)
                return r;
        if (s->egress) {
                r = append_egress(m);
                if (r < 0)
                        return r;
        }
        r = append_limits(m, s);
        if (r < 0)
                return r;

        /* A run never outlives the broker that started it. */
        if (s->binds_to) {
                r = sd_bus_message_append(m, "(sv)(sv)", s->part_of ? "PartOf" : "BindsTo", "as", 1, s->binds_to,
                                          "After", "as", 1, s->binds_to);
                if (r < 0)
                        return r;
        }

        return 0;
}
