/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "main-pid.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* systemd's command line: its words joined by spaces (quoted where they
 * need it, which a launcher's path does not). */
static bool first_word_is(const char *cmdline, const char *path) {
        size_t n = strlen(path);

        return n > 0 && strncmp(cmdline, path, n) == 0 && (cmdline[n] == '\0' || cmdline[n] == ' ');
}

int main_pid_runs(sd_bus_message *reply, uint32_t pid, const char *launcher) {
        const char *cgroup, *cmdline;
        bool found = false;
        uint32_t p;
        int r;

        assert(reply);
        assert(launcher);

        if (pid == 0)
                return 0;
        r = sd_bus_message_enter_container(reply, 'a', "(sus)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(sus)", &cgroup, &p, &cmdline)) > 0)
                if (p == pid)
                        found = first_word_is(cmdline, launcher);
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        return found;
}
