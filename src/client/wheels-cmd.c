/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "wheels-cmd.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build-config.h"
#include "config.h"
#include "macro.h"
#include "util.h"

#define WHEELS_SCRIPT LIBEXECDIR "/mcp-exec-wheels.py"

int wheels_cmd(int argc, char *argv[]) {
        _cleanup_free_ char *python = NULL, *err = NULL;
        _cleanup_free_ char **args = NULL;
        int r;

        assert(argc >= 1);
        assert(argv);

        /* MCP_EXEC_PYTHON from the environment, resolved as the broker
         * resolves it (never through $PATH); the script itself reads
         * /etc/mcp-exec/mcp-exec.conf for the pip it runs. */
        r = config_resolve_python(getenv("MCP_EXEC_PYTHON") ?: "python3", &python, &err);
        if (r < 0) {
                fprintf(stderr, "mcp-exec wheels: %s\n", err ?: strerror(-r));
                return EXIT_WHEELS_FAILED;
        }
        args = new0(char *, (size_t) argc + 3);
        if (!args) {
                fprintf(stderr, "mcp-exec wheels: out of memory\n");
                return EXIT_WHEELS_FAILED;
        }
        /* Root, in whatever directory and environment the administrator
         * typed this: -I (no PYTHON* variables, no user site, neither the
         * current nor the script's directory on sys.path), so that no
         * sitecustomize, argparse.py or pip/ of theirs runs. The script
         * starts pip isolated as well, from / (mcp-exec-wheels.py). */
        args[0] = python;
        args[1] = (char *) "-I";
        args[2] = (char *) WHEELS_SCRIPT;
        for (int i = 1; i < argc; i++)
                args[i + 2] = argv[i];
        execv(python, args);
        fprintf(stderr, "mcp-exec wheels: cannot run %s %s: %m\n", python, WHEELS_SCRIPT);
        return EXIT_WHEELS_FAILED;
}
