/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <systemd/sd-id128.h>

int fd_nonblock(int fd, bool nonblock);

/* Writes all of buf to a blocking fd, retrying on EINTR. */
int loop_write(int fd, const void *buf, size_t n);

/* Reads exactly n bytes from a blocking fd; -EPIPE on early EOF. Never reads
 * past n, so what follows stays in the pipe for the next reader. */
int loop_read_exact(int fd, void *buf, size_t n);

/* A random 128-bit id (sd_id128_randomize()) as 32 lowercase hex digits. */
int random_hex128(char ret[static SD_ID128_STRING_MAX]);

uint64_t now_usec(void);   /* CLOCK_MONOTONIC */

/* "1 MiB" where n is a whole number of KiB, MiB or GiB, else "1000 bytes". */
#define FORMAT_BYTES_MAX 32
char *format_bytes(uint64_t n, char buf[static FORMAT_BYTES_MAX]);

/* "SIGKILL" for 9; NULL for numbers that are no signal. */
const char *signal_to_name(int sig);

/* Reads f to its end into a new buffer (not NUL-terminated); -EFBIG past max. */
int read_full_stream(FILE *f, size_t max, char **ret, size_t *ret_len);

int getpeercred_fd(int fd, pid_t *ret_pid, uid_t *ret_uid, gid_t *ret_gid);
