/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the three daemons (broker, mount daemon, front end) do alike: one
 * loop, the socket systemd passes or one of our own, and the exit when idle.
 * What counts as idle, and what to say then, stays with each daemon. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

/* No uid (systemd's spelling). */
#ifndef UID_INVALID
#define UID_INVALID ((uid_t) -1)
#endif

/* The daemon's one loop: the thread's default sd-event, which exits on
 * SIGTERM and SIGINT (blocked here so that sd-event can take them) and pings
 * the service watchdog when the unit has one. */
int event_new_daemon(sd_event **ret);

/* The one socket systemd passed us (made non-blocking), else a
 * SOCK_SEQPACKET socket of our own bound at path (whatever had the name is
 * unlinked first), mode 0600, listening with backlog. Logs its failures.
 * Returns 1 with *ret_fd the activated socket, 0 with *ret_fd our own; -EINVAL
 * if systemd passed more than one. */
int daemon_listen_unix(const char *path, int backlog, int *ret_fd);

/* Keeps the idle timer *timer (created on first use, one-shot, usec from now,
 * calling callback) off while busy, and restarts it from now otherwise. A
 * timer that cannot be created is logged and ignored: the daemon then only
 * stays. */
void daemon_idle_update(sd_event *e, sd_event_source **timer, uint64_t usec, bool busy,
                        sd_event_time_handler_t callback, void *userdata);

/* Leaves the loop of an idle daemon, telling systemd it is stopping. The
 * caller says why, in its own words, first. */
int daemon_exit_idle(sd_event *e);

/* For a daemon that cannot start (a bad configuration): closes what is
 * queued on every listening socket systemd passed it. Left there, each
 * client would wait out its whole timeout while systemd starts the daemon
 * again, once a second (Restart=); closed, its request fails at once and the
 * journal says why. Bounded per socket: a client that keeps connecting is
 * for the next start. Sockets that do not listen are left alone. */
void daemon_refuse_queued(void);

/* Takes one connection off the non-blocking listening socket listen_fd
 * (non-blocking, O_CLOEXEC) with its peer's pid and uid. Returns 1 with
 * them; 0 when there was nothing to take; a negative errno when accept() or
 * reading the credentials failed, logged here as a warning (a connection
 * whose credentials cannot be read is closed: it is refused). */
int daemon_accept(int listen_fd, int *ret_fd, pid_t *ret_pid, uid_t *ret_uid);

/* The command line every daemon takes, and what one adds. */
struct option;
typedef struct DaemonArgv {
        void (*help)(void);                     /* prints the daemon's --help */
        const struct option *extra;             /* its own long options, {}-terminated, at most 8; NULL: none */
        int (*on_extra)(int c, char *arg);      /* sets one of them; < 0: invalid (logged there) */
        const char **listen;                    /* --listen=PATH */
        uint64_t *idle_exit_sec;                /* --idle-exit-sec=SEC */
} DaemonArgv;

/* Parses -h/--help, --listen=PATH, --idle-exit-sec=SEC and d->extra (no
 * positional arguments). Returns 1 to run, 0 after printing the help, or a
 * negative errno with the error logged. */
int daemon_parse_argv(const DaemonArgv *d, int argc, char *argv[]);

/* Answers a refused connection on fd before it is closed (the caller's words). */
typedef void (*daemon_refuse_t)(int fd, void *userdata);

/* daemon_accept() for the daemons only root may use: a peer whose uid is
 * neither 0 nor also_uid (UID_INVALID: none) is logged as refused, answered
 * by refuse (if not NULL), closed, and 0 is returned as when there was
 * nothing to take. Their sockets are 0600 root already; this holds if a mode
 * is wrong, and lets the broker admit the front end's user too. */
int daemon_accept_root(int listen_fd, uid_t also_uid, daemon_refuse_t refuse, void *userdata, int *ret_fd,
                       pid_t *ret_pid, uid_t *ret_uid);
