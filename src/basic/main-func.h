/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A program's work lives in "static int run(int argc, char *argv[])", which
 * holds its objects in _cleanup_ variables, so every return path tears them
 * down; main() only turns the result into an exit status, as systemd's
 * DEFINE_MAIN_FUNCTION: a negative errno is EXIT_FAILURE, 0 or a positive
 * value is the exit status itself. */

#include <stdlib.h>

#define DEFINE_MAIN_FUNCTION(impl)                                      \
        int main(int argc, char *argv[]) {                              \
                int _r_ = impl(argc, argv);                             \
                return _r_ < 0 ? EXIT_FAILURE : _r_;                    \
        }
