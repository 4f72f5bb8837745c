#!/usr/bin/env bash
# /dev/shm isolation: like test-tmp-isolation, for POSIX shared memory (/dev/shm), which
# PrivateDevices= alone bind-mounts from the host and so shares between concurrent runs.
# Plain pass only: the mount namespaces are systemd's and the kernel's.
. "$(dirname "$0")/../../lib/itest.sh"
# shellcheck disable=SC2034 # used by tests/lib/tmp-isolation.sh
DIRS="/dev/shm"
. "$ITEST_DIR/lib/tmp-isolation.sh"
