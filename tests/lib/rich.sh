# shellcheck shell=bash
# tests/lib/rich.sh - set-up shared by the tests of figures and files (issue 13):
# test-rich-results.sh and test-rich-attacks.sh. Source it after tests/lib/itest.sh and
# tests/lib/node-clients.sh.
#
# rich_setup [NAME=VALUE...]: the sandbox runs Debian's /usr/bin/python3, which has matplotlib
# (python3-matplotlib, installed by tests/run), with the given extra configuration; the broker and
# the local front end restart to read it, and a run must show that figures come back (the broker
# has the result channel and the launcher captures them). Fails, naming what is missing, if not.

RICH_PYTHON=/usr/bin/python3

rich_setup() {
    bx "$RICH_PYTHON" -c 'import matplotlib' >/dev/null 2>&1 ||
        fail "$RICH_PYTHON in the box has no matplotlib (apt-get install python3-matplotlib; tests/run installs it)"
    at_exit stop_frontend
    set_config "MCP_EXEC_PYTHON=$RICH_PYTHON" "$@"
    stop_frontend
    local out
    out=$(printf 'import matplotlib.pyplot as plt\nplt.plot([1])\n' | bx mcp-exec run 2>&1) ||
        fail "a plot does not run in the sandbox: $out"
    [[ $out == *"1 output returned (figures and files)"* ]] ||
        fail "a plot came back without its figure (does the broker have the result channel?): $out"
}
