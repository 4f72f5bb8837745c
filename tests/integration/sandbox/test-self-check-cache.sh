#!/usr/bin/env bash
# The self-check's verdict across idle exits: a passed self-check is kept (root's file in
# /var/cache/mcp-exec, mode 0600), and the broker's next start serves on it without a self-check
# unit; a new launcher binary, another limit, or a kept file that is not root's alone makes it
# check again. (On the code before the cache no file is written and every start checks.) A run
# unit that lacks what the running systemd should enforce (a drop-in: PrivatePIDs=no on 257,
# ProtectProc=default before) fails the self-check, and runs are refused, naming it; so does W^X
# forced on JavaScript's units (MemoryDenyWriteExecute=yes), which the self-check proves in a unit of
# their own (issue 42).
# Plain pass only: the same broker code in both passes; it restarts the broker six times.
. "$(dirname "$0")/../../lib/itest.sh"

CACHE=/var/cache/mcp-exec/self-check.json
LAUNCHER=/usr/libexec/mcp-exec/mcp-exec-launch

# start_and_call: a fresh broker start (as after an idle exit), then a run; sets c (the cursor).
start_and_call() {
    restart_broker
    c=$(journal_cursor)
    assert_runs_work
}
# probes_since CURSOR: the broker's MCP_PROBE values since CURSOR, one per line.
probes_since() { journal_since "$1" -o verbose --output-fields=MCP_PROBE | sed -n 's/^ *MCP_PROBE=//p'; }
# probe_verdict CURSOR VERDICT: the self-check since CURSOR ended VERDICT (passed, failed), after
# at most the one more unit the broker starts for a unit that ended with no exit status known to
# systemd (probe.c: seen under load; a unit that ran and failed is never retried).
probe_verdict() { [[ $(probes_since "$1" | tr '\n' ' ') =~ ^(retry\ )?$2\ $ ]]; }
# probe_units_since CURSOR: self-check units systemd started since CURSOR.
probe_units_since() { journal_since "$1" _PID=1 -o cat | grep -c 'mcp-exec sandbox self-check' || true; }

# --- no verdict: the broker checks and keeps it ------------------------------------------------------
bx rm -f "$CACHE"
start_and_call
wait_for 10 probe_verdict "$c" passed || fail "the self-check did not run: $(probes_since "$c")"
bx test -f "$CACHE" || fail "no verdict kept in $CACHE after a passed self-check"
mode=$(bx stat -c '%a %U' "$CACHE")
[[ $mode == "600 root" ]] || fail "$CACHE is $mode, not root's alone"
(($(probe_units_since "$c") >= 1)) || fail "no self-check unit in the journal for a fresh check"

# --- kept: the next start serves without a self-check unit ---------------------------------------
start_and_call
[[ $(probes_since "$c") == kept ]] || fail "the verdict was not used: MCP_PROBE=$(probes_since "$c" | tr '\n' ' ')"
(($(probe_units_since "$c") == 0)) || fail "a self-check unit started though the verdict was kept"
log "kept across a broker restart, no self-check unit"

# --- a new launcher: checked again ----------------------------------------------------------------
bx touch "$LAUNCHER"
start_and_call
wait_for 10 probe_verdict "$c" passed ||
    fail "a new launcher binary did not make the broker check again: MCP_PROBE=$(probes_since "$c" | tr '\n' ' ')"
(($(probe_units_since "$c") >= 1)) || fail "no self-check unit for a new launcher"
start_and_call
[[ $(probes_since "$c") == kept ]] || fail "the new verdict was not kept: $(probes_since "$c" | tr '\n' ' ')"

# --- another limit: checked again ------------------------------------------------------------------
set_config MCP_EXEC_TMP_SIZE_MAX=48M
c=$(journal_cursor)
assert_runs_work
wait_for 10 probe_verdict "$c" passed ||
    fail "another /tmp size did not make the broker check again: MCP_EXEC_TMP_SIZE_MAX: $(probes_since "$c" | tr '\n' ' ')"

# --- a kept file others may write: not ours, checked again -----------------------------------------
bx chmod 0644 "$CACHE"
start_and_call
wait_for 10 probe_verdict "$c" passed ||
    fail "a verdict file readable by others was used: $(probes_since "$c" | tr '\n' ' ')"
mode=$(bx stat -c '%a' "$CACHE")
[[ $mode == 600 ]] || fail "the verdict was not written again root's alone: $mode"

# --- a daemon-reload (drop-ins may have come): checked again ---------------------------------------
bx systemctl daemon-reload
start_and_call
wait_for 10 probe_verdict "$c" passed ||
    fail "the verdict outlived a daemon-reload: $(probes_since "$c" | tr '\n' ' ')"

# --- a property the running systemd should enforce is not: runs refused --------------------------
# A drop-in for every run unit takes away what this systemd gives: from 257 the run's own PID
# namespace (PrivatePIDs=), before it the hiding of other uids' processes (ProtectProc=). The
# self-check must notice and refuse runs, naming it; without the drop-in, runs work again.
version=$(bx systemctl show -p Version --value | grep -o '^[0-9]*')
if ((version >= 257)); then
    dropin='PrivatePIDs=no' want='PrivatePIDs='
else
    dropin='ProtectProc=default' want='ProtectProc=invisible'
fi
DROPIN=/etc/systemd/system/mcp-exec-run-.service.d/zz-test-self-check.conf
remove_dropin() { bx sh -c "rm -f $DROPIN && systemctl daemon-reload"; }
at_exit remove_dropin
bx sh -c "mkdir -p ${DROPIN%/*} && printf '[Service]\n%s\n' '$dropin' >$DROPIN && systemctl daemon-reload"
restart_broker
c=$(journal_cursor)
out=$(call_nosigpipe --timeout 10 -- 'print("should not run")')
log "systemd $version, run units with $dropin: $out $(call_err | head -2)"
[[ $out != *"should not run"* ]] || fail "the code ran although the self-check must fail ($dropin)"
wait_for 10 probe_verdict "$c" failed ||
    fail "the self-check did not fail with $dropin: $(probes_since "$c" | tr '\n' ' ')"
found_failure() { journal_since "$c" -o cat | grep -F 'Sandbox self-check failed' | grep -F "$want"; }
found found_failure ||
    fail "no self-check failure naming $want:"$'\n'"$(journal_since "$c" -o cat | grep -i self-check)"
log "journal: $(found_failure | head -1)"
bx test ! -e "$CACHE" || fail "a failed self-check left a kept verdict"
remove_dropin
start_and_call
wait_for 10 probe_verdict "$c" passed ||
    fail "without the drop-in the self-check did not pass again: $(probes_since "$c" | tr '\n' ' ')"

# --- issue 42: JavaScript's units (--jit) are checked in a unit of their own ------------------------
# W^X in every run unit (MemoryDenyWriteExecute=yes) is what Python's and bash's units claim anyway,
# but it would kill every node run: with JavaScript on, its self-check unit must fail, naming it.
if bx test -x /usr/bin/node; then
    started=$(journal_since "$c" _PID=1 -o cat | grep -c '^Started .*mcp-exec sandbox self-check' || true)
    # (Three where the probe's one retry came: probes_since says "retry".)
    want_started=$((2 + $(probes_since "$c" | grep -c '^retry$' || true)))
    ((started == want_started)) ||
        fail "not two self-check units (Python's, JavaScript's) on a fresh check: $started ($(probes_since "$c" | tr '\n' ' '))"
    bx sh -c "mkdir -p ${DROPIN%/*} && printf '[Service]\n%s\n' MemoryDenyWriteExecute=yes >$DROPIN &&
              systemctl daemon-reload"
    restart_broker
    c=$(journal_cursor)
    out=$(call_nosigpipe --timeout 10 -- 'print("should not run")')
    [[ $out != *"should not run"* ]] || fail "the code ran although JavaScript's self-check must fail"
    wait_for 10 probe_verdict "$c" failed ||
        fail "W^X forced on JavaScript's units did not fail the self-check: $(probes_since "$c" | tr '\n' ' ')"
    want='JavaScript units: writable code for the JIT'
    found found_failure ||
        fail "no self-check failure naming '$want':"$'\n'"$(journal_since "$c" -o cat | grep -i self-check)"
    log "journal: $(found_failure | head -1)"
    remove_dropin
    start_and_call
    wait_for 10 probe_verdict "$c" passed ||
        fail "without the W^X drop-in the self-check did not pass again: $(probes_since "$c" | tr '\n' ' ')"
fi
pass
