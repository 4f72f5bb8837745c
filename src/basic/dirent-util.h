/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Directory streams with _cleanup_. Apart from macro.h: <dirent.h> brings
 * <linux/limits.h> (NAME_MAX, MAX_INPUT, ...) into every file otherwise. */

#include <dirent.h>

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}
