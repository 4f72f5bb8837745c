#!/usr/bin/env bash
# /tmp isolation: while run A holds /tmp/secret-* (and /var/tmp/secret-*), a concurrent run B
# does not see it; a later run C does not see files of the earlier runs either.
# Plain pass only: the mount namespaces are systemd's and the kernel's.
. "$(dirname "$0")/../../lib/itest.sh"
# shellcheck disable=SC2034 # used by tests/lib/tmp-isolation.sh
DIRS="/tmp /var/tmp"
. "$ITEST_DIR/lib/tmp-isolation.sh"
