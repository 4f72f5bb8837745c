/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Writes a file whose relative path came from somewhere untrusted (a
 * server's result) beneath a directory, and nowhere else: no component may
 * be empty, "." or "..", no symlink is followed, and the file replaces
 * whatever had its name by a rename, so nothing is written through a link. */

#include <stddef.h>

/* Creates the missing directories of path (0755) beneath dir_fd and the
 * file itself (0644) with data[0..n). -EINVAL: path is absolute or has a bad
 * component; -ELOOP/-ENOTDIR: a component is a symlink or no directory;
 * -EISDIR: a directory has the file's name; other -errno from the calls. */
int write_beneath(int dir_fd, const char *path, const void *data, size_t n);
