#!/usr/bin/env bash
# The attack corpus (test-attacks.sh) once more, every run on a warm unit of the pool
# (MCP_EXEC_POOL_SIZE=2, a light preload): the same containment on the path whose interpreter
# was started, and its modules imported, before the code came.
# Plain pass only: as test-attacks.sh, containment is the kernel's and systemd's.
# Heavy: as test-attacks.sh, the corpus's bombs and busy loops take both cores.
ATTACK_MODE=warm exec "$(dirname "$0")/test-attacks.sh" "$@"
