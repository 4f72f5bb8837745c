# SPDX-License-Identifier: LGPL-2.1-or-later
# mcp-exec-bootstrap.sh: the shell side of a bash run (launch-lang.h), started
# by the launcher inside the run's sandbox before any code is known, as
# "bash --norc --noprofile mcp-exec-bootstrap.sh [--session]". Its fds: 0 the
# program's stdin (a memfd the launcher fills), 1 and 2 pipes the launcher
# relays to the caller, 3 the control socket ("ready", "go", "done N"), 4 the
# code (a memfd). The program runs in this shell: a warm unit's start is not
# paid again, and a session's variables, functions and working directory
# stay from call to call.
#
# Our code only until the program starts: from then on this process is the
# program's, and the launcher trusts nothing it says.

if [[ ${1-} != --session ]]; then
        printf 'ready\n' >&3
        IFS= read -r __mcp_go <&3 || exit 125
        [[ $__mcp_go == go ]] || exit 125
        unset __mcp_go
        # No child of the program holds the control socket; the code's own
        # fd goes as its first command runs (bash has read it all by then).
        exec 3>&-
        # (functrace: a sourced file runs the DEBUG trap only with it; off again
        # at once, as the program expects.)
        BASH_ARGV0=bash
        set -T
        trap 'if [[ $BASH_COMMAND != ". /proc/self/fd/4" ]]; then exec 4<&-; trap - DEBUG; set +T; fi' DEBUG
        # As "bash script" runs it; its exit status is the shell's.
        . /proc/self/fd/4
        exit
fi

# A session: call after call in this shell, until the launcher closes fd 3.
# A call's SIGINT (its timeout, or its caller gone) ends the call: the
# foreground command gets it from the process group, and then every
# function and sourced file returns (extdebug: a DEBUG trap's status 2 is a
# return), back to the loop; the state stays.
__mcp_unwind() {
        shopt -s extdebug
        trap 'if [[ ${FUNCNAME[0]-} ]]; then return 2; fi' DEBUG
}

__mcp_interrupt() {
        __mcp_interrupted=1
        __mcp_unwind
}

# "exit" ends the call with its status, as a script's exit would, not the
# session (a subshell's is its own, as ever).
exit() {
        __mcp_exit=$?
        if [[ $BASHPID != "$__mcp_pid" ]]; then
                builtin exit "$@"
        fi
        __mcp_exit=${1-$__mcp_exit}
        __mcp_unwind
        return "$__mcp_exit"
}

__mcp_call() {
        . /proc/self/fd/4
}

__mcp_pid=$BASHPID
trap __mcp_interrupt INT
printf 'ready\n' >&3
while IFS= read -r __mcp_go <&3; do
        [[ $__mcp_go == go ]] || continue
        __mcp_interrupted= __mcp_exit=
        # fd 3 closed for the call (bash keeps its own copy close-on-exec),
        # so no program the code starts holds it; stdin from its start.
        __mcp_call 3>&- </dev/stdin
        __mcp_status=$?
        trap - DEBUG
        shopt -u extdebug
        [[ $__mcp_exit ]] && __mcp_status=$((__mcp_exit & 255))
        [[ $__mcp_interrupted ]] && __mcp_status=-2
        printf 'done %d\n' "$__mcp_status" >&3
done
builtin exit 0
