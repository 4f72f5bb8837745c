#!/usr/bin/env bash
# The warm pool (MCP_EXEC_POOL_SIZE): single-use units started ahead, with the preload imported.
#   asleep     idle warm units take no CPU while they wait (a launcher once polled in a loop)
#   yield      a warm unit imports at the lowest CPU weight, a ready or taken one has a run's:
#              refills take only CPU the runs leave, and code never starts at the importing
#              weight (the kernel's own value, not only the property; importing: in outpaced)
#   isolation  two consecutive warm runs: different uids, an empty /tmp, nothing of the first
#              visible to the second (files, processes); both served by warm units; the code
#              imports mcp_servers (code mode), which no warm unit preloads
#   timeout    the unit that waited longest still gives its run the full timeout; a run past its
#              timeout on a warm unit is stopped at it and reported timed_out
#   notify     code writing READY=1, EXTEND_TIMEOUT_USEC=, STOPPING=1 to the notify socket gains
#              nothing: there is no socket in the run, and its timeout holds
#   parent     code that kills the launcher (the unit's main process) ends the run, clearly; from
#              systemd 257 it cannot (PID 1 of the run's namespace): the run goes on
#   memory     the preload does not eat the code's memory: a warm run can use close to
#              MCP_EXEC_MEMORY_MAX, and not more
#   preload    a module that fails to import is logged once and left out; one that kills the
#              interpreter makes the pool give up after three tries; runs work throughout
#   outpaced   a run that finds warm units only still importing, when runs are short next to an
#              import, holds them to 5% of a CPU until no run was in flight for a moment, then
#              gives them a run's quota back; after a long run they are left alone; a taken unit
#              always has a run's quota
#   lifetime   a full pool leaves no unit after: SIGKILL of the broker, daemon-reload (replaced),
#              a stop of mcp-exec.slice (not refilled until the next run), a package change
#              (replaced, and the next run is not served by a stale unit)
#   spare      the broker's start asks for one cold run's unit: the call that started it takes
#              it (a cold run: a run's MemoryMax=, not warm, its timeout held); unused, it ends
#              once a warm unit is ready
#   idle       the broker's idle exit: where systemd keeps its fd store across the exit
#              (FileDescriptorStorePreserve=yes, systemd >= 254) a ready warm unit outlives it and
#              serves the first call after (that very unit); one stored before the configuration
#              changed, or whose unit was stopped meanwhile, is never used; a stop of the broker
#              stops it; on 252 the warm units stop with the broker, as they always did. A
#              language's pool (issue 42) likewise: a bash call's warm unit is kept, never given a
#              javascript or python run after, and serves the next bash run; one stored before the
#              configuration changed is never used; on 252 it stops
# Plain pass only: its checks are unit states, CPU weights and quotas, uids and lifetimes that
# systemd and the kernel set, the same in both builds; the broker's pool code runs under ASan in
# every test of that pass, which takes warm units by default (MCP_EXEC_POOL_SIZE=2).
. "$(dirname "$0")/../../lib/itest.sh"

# Where a module installed by the admin lands (dist-packages of /usr/local), as Python says.
SITE=$(bx /usr/bin/python3 -I -c 'import site; print([p for p in site.getsitepackages() if p.startswith("/usr/local/")][0])') ||
    fail "cannot find /usr/local's site-packages"
broker_log() { journal_since "$1" -o short-monotonic | grep -a 'mcp-exec-brokerd\[' || true; }
# units_described REGEX [--all]: the (with --all: also inactive) run units whose description
# (src/broker/sandbox-properties.h) matches. The broker marks warm units "(starting)", then
# "(idle)" once the preload is in and the limit set, and a taken one "sandboxed run".
units_described() {
    # shellcheck disable=SC2086 # ${2-}: nothing, or --all
    bx systemctl list-units ${2-} 'mcp-exec-run-*' --plain --no-legend --no-pager 2>/dev/null |
        awk -v re="$1" '$0 ~ re { print $1 }'
}
# (Python's: a language's ready units say which, "(idle) bash".)
ready_units() { units_described 'mcp-exec warm unit \(idle\) *$' --all; }
importing_units() { units_described 'mcp-exec warm unit \(starting\)'; }
running_runs() { units_described 'mcp-exec sandboxed run'; }
warm_count() { ready_units | grep -c . || true; }
pool_full() { (($(warm_count) == $1)); }
# was_warm RESULT: the run of this result was served by a warm unit (the broker's journal says).
was_warm() {
    local id
    id=$(jget "$1" 'r.get("run_id") or ""')
    [[ -n $id ]] && bx journalctl --no-pager -o export MCP_RUN_ID="$id" 2>/dev/null | grep -aq '^MCP_WARM=1$'
}
all_units() {
    bx systemctl list-units --all 'mcp-exec-run-*' --plain --no-legend --no-pager 2>/dev/null | awk '{print $1}'
}
no_units_at_all() { [[ -z $(all_units) ]]; }

set_config MCP_EXEC_POOL_SIZE=2 MCP_EXEC_PRELOAD=json
bx systemctl start mcp-exec-broker.service || fail "the broker does not start"
wait_for 30 pool_full 2 || fail "the pool did not fill: $(warm_idle_units)"
log "pool of 2 ready: $(warm_idle_units | tr '\n' ' ')"

# --- asleep ---------------------------------------------------------------------------------------
# CPU time of the warm units' processes (clock ticks) over 3 s: a waiting unit sleeps. A busy
# loop would take ~300 ticks per unit; any sleeping process takes ~0.
cpu_ticks() {
    local pids
    pids=$(warm_pids | tr '\n' ' ')
    [[ -n $pids ]] || { echo 0; return; }
    # shellcheck disable=SC2086
    bx sh -c "cat $(printf '/proc/%s/stat ' $pids) 2>/dev/null" | awk '{ s += $14 + $15 } END { print s + 0 }'
}
t1=$(cpu_ticks)
sleep 3
t2=$(cpu_ticks)
log "idle warm units: $((t2 - t1)) ticks of CPU in 3 s"
(((t2 - t1) < 50)) || fail "idle warm units are not asleep: $((t2 - t1)) clock ticks of CPU in 3 s"

# --- yield ----------------------------------------------------------------------------------------
# cpu_weight UNIT: the kernel's weight of the unit's cgroup (cgroup v1: cpu.shares, 1024 = 100).
cpu_weight() {
    local cg
    cg=$(bx systemctl show -P ControlGroup "$1") && [[ -n $cg ]] || return 1
    bx sh -c "if [ -d /sys/fs/cgroup/cpu ]; then cat /sys/fs/cgroup/cpu$cg/cpu.shares; else cat /sys/fs/cgroup$cg/cpu.weight; fi"
}
# A ready unit only waits (asleep, above): it has a run's weight already, so that the code it gets
# does not start at the importing one while PID 1 has yet to change it.
for u in $(warm_idle_units); do
    w=$(cpu_weight "$u") || fail "no CPU weight for warm unit $u"
    log "ready warm unit $u: CPU weight $w ($(bx systemctl show -P CPUWeight "$u"))"
    [[ $w == 1024 || $w == 100 ]] || fail "ready warm unit $u has CPU weight $w, not a run's"
done
call --timeout 20 -- 'import time; time.sleep(4)' >/dev/null &
yield_pid=$!
wait_for 10 eval '[[ -n $(running_runs) ]]' || fail "the sleeping run's unit did not show up"
u=$(running_runs | head -1)
wait_for 5 eval '[[ $(cpu_weight "$u") == 1024 || $(cpu_weight "$u") == 100 ]]' ||
    fail "the taken warm unit $u kept CPU weight $(cpu_weight "$u"), not a run's"
log "taken warm unit $u: CPU weight $(cpu_weight "$u")"
wait "$yield_pid" || fail "the sleeping run failed: $(call_err)"
wait_for 30 pool_full 2 || fail "the pool did not refill after the sleeping run"

# --- isolation ------------------------------------------------------------------------------------
code_a='import os, subprocess, json
open("/tmp/mcppoolsecret", "w").write("x")
os.makedirs("/tmp/outputs", exist_ok=True)
p = subprocess.Popen(["sleep", "300"], start_new_session=True)
print(json.dumps({"uid": os.getuid(), "tmp": sorted(os.listdir("/tmp")), "bg": p.pid}))'
code_b='import os, json, sys
procs = [p for p in os.listdir("/proc") if p.isdigit()]
mcp = ["mcp_servers" in sys.modules]
import mcp_servers
mcp += [mcp_servers.servers(), mcp_servers.__file__]
print(json.dumps({"uid": os.getuid(), "tmp": sorted(os.listdir("/tmp")), "shm": sorted(os.listdir("/dev/shm")),
                  "procs": len(procs), "mods": "json" in sys.modules, "mcp": mcp}))'
out_a=$(call --timeout 20 -- "$code_a") || fail "run A failed: $out_a $(call_err)"
wait_for 10 pool_full 1 || true
out_b=$(call --timeout 20 -- "$code_b") || fail "run B failed: $out_b $(call_err)"
log "A: $(jget "$out_a" 'r["stdout"]')"
log "B: $(jget "$out_b" 'r["stdout"]')"
was_warm "$out_a" || fail "run A was not served by a warm unit"
was_warm "$out_b" || fail "run B was not served by a warm unit"
jcheck "$out_b" 'r["exit_code"] == 0' "run B's code failed (mcp_servers not importable?)"
"$PY" - "$(jget "$out_a" 'r["stdout"]')" "$(jget "$out_b" 'r["stdout"]')" <<'PYEOF' || fail "two warm runs were not isolated"
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
bad = []
if a["uid"] == b["uid"]:
    bad.append("same uid %d" % a["uid"])
if a["tmp"] != ["mcppoolsecret", "outputs"]:
    bad.append("run A's /tmp did not start empty: %r" % a["tmp"])
if b["tmp"] or b["shm"]:
    bad.append("run B sees files: /tmp %r /dev/shm %r" % (b["tmp"], b["shm"]))
if b["procs"] > 3:
    bad.append("run B sees %d processes (its own are python, maybe a shell: at most 3)" % b["procs"])
if not b["mods"]:
    bad.append("the preload (json) was not imported in the warm interpreter")
# Code mode's package: importable in the sandbox, from next to the bootstrap, never preloaded.
if b["mcp"][0] or b["mcp"][1] != [] or not b["mcp"][2].endswith("/mcp-exec/python/mcp_servers/__init__.py"):
    bad.append("mcp_servers: preloaded, or not from the bootstrap's python/, or servers without tools: %r" % b["mcp"])
print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PYEOF
assert_clean 15

# --- timeout --------------------------------------------------------------------------------------
wait_for 30 pool_full 2 || fail "the pool did not refill"
sleep 6   # the oldest warm unit now waited > 6 s; its run must still get all of its 4 s
out=$(call --timeout 4 -- 'import time; time.sleep(3); print("done")') || fail "the long waiter's run failed: $(call_err)"
jcheck "$out" 'r["exit_code"] == 0 and r["stdout"] == "done\n" and not r["timed_out"]' \
    "a run on a long-waiting warm unit did not get its full timeout"
was_warm "$out" || fail "the long waiter's run was not warm"
t0=$SECONDS
out=$(call --timeout 2 -- 'import time; time.sleep(30)') || fail "the timed-out run failed: $(call_err)"
jcheck "$out" 'r["timed_out"] is True and r["exit_code"] == -1' "a warm run past its timeout was not stopped and reported"
((SECONDS - t0 < 10)) || fail "a warm run with timeout 2 s took $((SECONDS - t0)) s"
was_warm "$out" || fail "the timed-out run was not warm"

# --- notify ---------------------------------------------------------------------------------------
code='import os, socket, time
res = {"NOTIFY_SOCKET": os.environ.get("NOTIFY_SOCKET")}
for path in ("/run/systemd/notify", os.environ.get("NOTIFY_SOCKET") or "/run/systemd/notify"):
    for msg in (b"READY=1", b"EXTEND_TIMEOUT_USEC=600000000", b"STOPPING=1", b"WATCHDOG_USEC=600000000"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            s.sendto(msg, path)
            res[path] = "sent"
        except OSError as e:
            res[path] = e.errno
print(res, flush=True)
time.sleep(30)'
wait_for 30 pool_full 2 || true
t0=$SECONDS
out=$(call --timeout 3 -- "$code") || fail "the notify run failed: $(call_err)"
log "notify: $(jget "$out" 'r["stdout"]')"
jcheck "$out" 'r["timed_out"] is True' "writing to the notify socket extended a run past its timeout"
jcheck "$out" '"sent" not in r["stdout"] and "None" in r["stdout"]' "the run could reach a notify socket"
((SECONDS - t0 < 12)) || fail "the notify run took $((SECONDS - t0)) s with a 3 s timeout"

# --- parent ---------------------------------------------------------------------------------------
out=$(call --timeout 20 -- 'import os, time
print("killing", flush=True)
os.kill(os.getppid(), 9)
time.sleep(10)
print("still here")') || fail "the parent-killing run failed: $(call_err)"
log "parent killed: $out"
# From systemd 257 the launcher is PID 1 of the run's own PID namespace (PrivatePIDs=): the
# kernel drops a SIGKILL from inside it, so the run goes on and ends as the program does.
if (($(bx systemctl show -p Version --value | grep -o '^[0-9]*') >= 257)); then
    jcheck "$out" 'r["exit_code"] == 0 and r["stdout"] == "killing\nstill here\n" and not r["timed_out"]' \
        "the program killed its launcher, PID 1 of its namespace"
else
    jcheck "$out" 'r["exit_code"] == -1 and r["signal"] == "SIGKILL" and "still here" not in r["stdout"] and not r["timed_out"]' \
        "killing the launcher did not end the run clearly"
fi
assert_clean 15

# --- memory ---------------------------------------------------------------------------------------
set_config MCP_EXEC_POOL_SIZE=1 MCP_EXEC_MEMORY_MAX=192M
bx systemctl start mcp-exec-broker.service
# The data stack's import at the idle CPU weight: seconds alone, over a minute beside CI's other
# passes on two busy cores (Debian 13's, once); the wait ends as soon as it is ready.
wait_for 180 pool_full 1 || fail "the pool (data stack preload) did not fill"
out=$(call --timeout 30 -- 'b = bytearray(150 << 20); b[::4096] = b"x" * len(b[::4096]); print("ok")') ||
    fail "the memory run failed: $(call_err)"
jcheck "$out" 'r["exit_code"] == 0 and r["stdout"] == "ok\n"' \
    "a warm run could not use 150 MiB of MCP_EXEC_MEMORY_MAX=192M (the preload ate the code's memory)"
was_warm "$out" || fail "the memory run was not warm"
wait_for 60 pool_full 1 || fail "the pool did not refill"
out=$(call --timeout 30 -- 'b = bytearray(400 << 20); b[::4096] = b"x" * len(b[::4096]); print("not ok")') ||
    fail "the over-limit run failed: $(call_err)"
jcheck "$out" 'r["oom_killed"] is True and "not ok" not in r["stdout"]' "a warm run could use far more than MCP_EXEC_MEMORY_MAX"
was_warm "$out" || fail "the over-limit run was not warm"

# --- preload --------------------------------------------------------------------------------------
bx sh -ec "mkdir -p $SITE/mcpbadimport $SITE/mcpcrashimport
           echo 'raise ImportError(\"broken on purpose\")' >$SITE/mcpbadimport/__init__.py
           echo 'import os; os._exit(3)' >$SITE/mcpcrashimport/__init__.py"
at_exit "bx rm -rf $SITE/mcpbadimport $SITE/mcpcrashimport"
cur=$(journal_cursor)
set_config MCP_EXEC_POOL_SIZE=2 MCP_EXEC_PRELOAD=json,mcpbadimport
bx systemctl start mcp-exec-broker.service
wait_for 60 pool_full 2 || fail "the pool did not fill with a failing module in the preload"
failed_line() { broker_log "$cur" | grep 'failed to import'; }
wait_for 10 found failed_line || fail "the failed import was not logged: $(broker_log "$cur" | tail -5)"
(($(failed_line | grep -c .) == 1)) || fail "the failed import was logged more than once: $(failed_line)"
out=$(call --timeout 20 -- 'print(6*7)') || fail "a run with a failing preload module failed: $(call_err)"
jcheck "$out" 'r["stdout"] == "42\n"' "a run with a failing preload module did not work"

cur=$(journal_cursor)
set_config MCP_EXEC_POOL_SIZE=2 MCP_EXEC_PRELOAD=json,mcpcrashimport
bx systemctl start mcp-exec-broker.service
gave_up() { broker_log "$cur" | grep 'the pool stops'; }
wait_for 60 found gave_up || fail "the pool did not give up on a preload that kills the interpreter: $(broker_log "$cur" | tail -8)"
out=$(call --timeout 20 -- 'print(6*7)') || fail "a run after the pool gave up failed: $(call_err)"
jcheck "$out" 'r["stdout"] == "42\n"' "a run after the pool gave up did not work (cold path)"
assert_clean 15
[[ $(warm_count) -eq 0 ]] || fail "the pool gave up but warm units are left: $(warm_idle_units)"

# --- outpaced -------------------------------------------------------------------------------------
# A preload module that takes 12 s: the pool's import time. Two warm runs, so that both
# replacements import; a cold run (no unit ready) beside them is then short next to an import (no
# cold run known yet): the pool holds them to 5% of a CPU until the runs pause. The next cold run,
# after a cold one of 4 s (a third of the import), leaves them alone: beside long runs the pool
# keeps refilling. While the file "gate" is there, the import also waits for its removal (60 s at
# most): the replacements are still importing when the checks need them to, however slow the
# machine (without it, a busy machine once let them finish first).
bx sh -ec "mkdir -p $SITE/mcpslowimport && cat >$SITE/mcpslowimport/__init__.py" <<'PY'
import os, time
time.sleep(12)
for _ in range(600):
    if not os.path.exists(os.path.join(os.path.dirname(__file__), "gate")):
        break
    time.sleep(0.1)
PY
at_exit "bx rm -rf $SITE/mcpslowimport"
set_config MCP_EXEC_POOL_SIZE=2 MCP_EXEC_PRELOAD=json,mcpslowimport
bx systemctl start mcp-exec-broker.service
quotas() { for u in $(importing_units); do bx systemctl show -P CPUQuotaPerSecUSec "$u"; done | sort | uniq -c | xargs; }
wait_for 90 pool_full 2 || fail "the pool with a slow preload did not fill: $(all_units)"
bx touch "$SITE/mcpslowimport/gate"
for i in 1 2; do
    out=$(call --timeout 20 -- 'pass') || fail "warm run $i failed: $(call_err)"
    was_warm "$out" || fail "run $i was not served by a warm unit"
done
wait_for 10 eval '(($(importing_units | grep -c .) == 2))' || fail "no two replacements importing: $(all_units)"
for u in $(importing_units); do
    w=$(cpu_weight "$u") || fail "no CPU weight for importing warm unit $u"
    [[ $w == 10 || $w == 1 ]] || fail "warm unit $u imports at CPU weight $w, not the lowest"
done
log "importing warm units: the lowest CPU weight"
[[ $(quotas) == "2 1s" ]] || fail "warm units import with CPU quotas $(quotas), not a run's (1s)"
call --timeout 20 -- 'import time; time.sleep(4)' >/dev/null &
slow_pid=$!
wait_for 3 eval '[[ $(quotas) == "2 50ms" ]]' || fail "a short run outpaced the pool, but its importing units have CPU quotas $(quotas)"
log "outpaced: importing warm units held to $(quotas)"
wait "$slow_pid" || fail "the run that outpaced the pool failed: $(call_err)"
wait_for 3 eval '[[ $(quotas) == "2 1s" ]]' || fail "after the runs paused the importing units kept CPU quotas $(quotas)"
call --timeout 20 -- 'import time; time.sleep(4)' >/dev/null &
slow_pid=$!
sleep 1.5
(($(importing_units | grep -c .) == 2)) || fail "the replacements stopped importing too early for the check: $(all_units)"
[[ $(quotas) == "2 1s" ]] || fail "beside a run after a long one, the importing units were held: $(quotas)"
wait "$slow_pid" || fail "the run beside the importing units failed: $(call_err)"
bx rm -f "$SITE/mcpslowimport/gate"
wait_for 60 pool_full 2 || fail "the pool did not fill after the pause"
call --timeout 20 -- 'import time; time.sleep(2)' >/dev/null &
slow_pid=$!
wait_for 10 eval '[[ -n $(running_runs) ]]' || fail "the run on a warm unit did not show up"
u=$(running_runs | head -1)
q=$(bx systemctl show -P CPUQuotaPerSecUSec "$u")
[[ $q == 1s ]] || fail "a taken warm unit has CPU quota $q, not a run's"
wait "$slow_pid" || fail "the run on a once held warm unit failed: $(call_err)"

# --- lifetime -------------------------------------------------------------------------------------
set_config MCP_EXEC_POOL_SIZE=2 MCP_EXEC_PRELOAD=json
bx systemctl start mcp-exec-broker.service
wait_for 30 pool_full 2 || fail "the pool did not fill"

# daemon-reload: the warm units are replaced, never more than the pool.
old=$(warm_idle_units | sort)
bx systemctl daemon-reload
replaced() { pool_full 2 && [[ -z $(comm -12 <(warm_idle_units | sort) <(echo "$old")) ]]; }
wait_for 30 replaced || fail "daemon-reload did not replace the warm units: before $old, now $(warm_idle_units)"
(($(all_units | grep -c .) <= 2)) || fail "more units than the pool after daemon-reload: $(all_units)"

# A package change: the next run is cold, and the pool is replaced.
old=$(warm_idle_units | sort)
bx sh -c "mkdir -p $SITE/mcppoolstamp && touch $SITE"
at_exit "bx rm -rf $SITE/mcppoolstamp"
cur=$(journal_cursor)
out=$(call --timeout 20 -- 'print(6*7)') || fail "the run after a package change failed: $(call_err)"
was_warm "$out" && fail "a warm unit that predates a package change served a run"
recycled() { broker_log "$cur" | grep -q 'packages changed' && [[ -z $(comm -12 <(warm_idle_units | sort) <(echo "$old")) ]]; }
wait_for 60 recycled || fail "the pool was not replaced after a package change"

# mcp-exec.slice stopped: every unit goes, and the pool does not come back until the next run.
# The package change started a discovery whose end replaces the pool once more; a stop before
# that end sees the pool refill. The broker answers "info" only once no discovery runs, and its
# pool_ready counts only units it would hand out: settled when it says 2 and systemd agrees.
broker_pool_ready() {
    bx python3 -c '
import json, socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(30)
s.connect("/run/mcp-exec/broker.sock")
s.send(b"{\"op\":\"info\"}")
print(json.loads(s.recv(65536))["pool_ready"])' 2>/dev/null
}
settled() { [[ $(broker_pool_ready) == 2 ]] && pool_full 2; }
wait_for 60 settled || fail "the pool did not refill"
bx systemctl stop mcp-exec.slice
wait_for 15 no_units_at_all || fail "units left after stopping mcp-exec.slice: $(all_units)"
sleep 3
no_units_at_all || fail "the pool refilled by itself after mcp-exec.slice was stopped: $(all_units)"
out=$(call --timeout 20 -- 'print(6*7)') || fail "a run after the slice stop failed: $(call_err)"
jcheck "$out" 'r["stdout"] == "42\n"' "a run after the slice stop did not work"
wait_for 30 pool_full 2 || fail "the pool did not refill after the next run"

# SIGKILL of the broker with a full pool: its warm units go with it (BindsTo=; where they are only
# PartOf= it, systemd >= 254, their launchers see their control sockets close and exit).
pid=$(bx systemctl show -P MainPID mcp-exec-broker.service)
[[ $pid =~ ^[1-9][0-9]*$ ]] || fail "no broker to kill"
bx logger -t mcp-exec-tests "MCP_TEST_DELIBERATE_KILL=mcp-exec-broker.service pid $pid ($ITEST_NAME)"
bx kill -9 "$pid"
wait_for 15 no_units_at_all || fail "units left after the broker was SIGKILLed with a full pool: $(all_units)"
bx systemctl reset-failed mcp-exec-broker.service >/dev/null 2>&1
out=$(call --timeout 20 -- 'print(6*7)') || fail "a run after the broker's SIGKILL failed: $(call_err)"
jcheck "$out" 'r["stdout"] == "42\n"' "a run after the broker's SIGKILL did not work"
assert_clean 15

# --- spare ----------------------------------------------------------------------------------------
# The broker's start asks PID 1 for one cold run's unit at once (no preload, a run's MemoryMax=):
# the call that started the broker takes it, even before it runs; the run is cold, its timeout
# holds; the first ready warm unit ends an unused spare.
spare_units() { units_described 'mcp-exec warm unit \(spare\)' "$@"; }
set_config MCP_EXEC_POOL_SIZE=2 MCP_EXEC_PRELOAD=json MCP_EXEC_MEMORY_MAX=256M
bx systemctl stop mcp-exec-broker.service
wait_for 15 no_units_at_all || fail "units left after the broker's stop: $(all_units)"
call --timeout 20 -- 'import time; time.sleep(3); print("on the spare")' >"$HDIR/spare.out" &
spare_pid=$!
wait_for 10 eval '[[ -n $(running_runs) ]]' || fail "the first run's unit did not show up as a run: $(all_units)"
u=$(running_runs | head -1)
mm=$(bx systemctl show -P MemoryMax "$u")
log "first run after the broker's start: $u, MemoryMax=$mm"
[[ $mm == $((256 << 20)) ]] || fail "the first run's unit $u has MemoryMax=$mm, not a cold run's $((256 << 20))"
wait "$spare_pid" || fail "the first run after the broker's start failed: $(call_err)"
out=$(<"$HDIR/spare.out")
jcheck "$out" 'r["exit_code"] == 0 and r["stdout"] == "on the spare\n" and not r["timed_out"]' \
    "the run on the spare did not work"
id=$(jget "$out" 'r.get("run_id") or ""')
bx journalctl --no-pager -o export MCP_RUN_ID="$id" 2>/dev/null | grep -aq '^MCP_SPARE=1$' ||
    fail "the first run after the broker's start did not take the spare"
was_warm "$out" && fail "the run on the spare was reported warm (it has no preload)"
# Its timeout is the broker's deadline (its RuntimeMaxSec= only caps the unit's life).
bx systemctl stop mcp-exec-broker.service
wait_for 15 no_units_at_all || fail "units left after the broker's stop: $(all_units)"
out=$(call --timeout 2 -- 'import time; time.sleep(30)') || fail "the timed-out run on the spare failed: $(call_err)"
jcheck "$out" 'r["timed_out"] is True and r["duration_ms"] < 5000' "a run on the spare was not stopped at its timeout"
id=$(jget "$out" 'r.get("run_id") or ""')
bx journalctl --no-pager -o export MCP_RUN_ID="$id" 2>/dev/null | grep -aq '^MCP_SPARE=1$' ||
    fail "the timed-out run did not take the spare"
# Not taken: gone once a warm unit is ready.
bx systemctl restart mcp-exec-broker.service
wait_for 10 found spare_units || fail "no spare unit after the broker's start: $(all_units)"
wait_for 30 pool_full 2 || fail "the pool did not fill beside the spare"
wait_for 10 eval '[[ -z $(spare_units --all) ]]' || fail "an unused spare was left beside a ready pool: $(all_units)"
assert_clean 15

# --- idle -----------------------------------------------------------------------------------------
# The broker exits 2 s after its last client here (a drop-in), or, where it stays for its warm units
# (252), once they would be retired (MCP_EXEC_POOL_IDLE_S=12).
IDLE_DROPIN=/run/systemd/system/mcp-exec-broker.service.d/itest-idle.conf
# Off: no broker, what it stored closed (its units see their sockets hang up and end).
idle_dropin_off() {
    bx systemctl stop mcp-exec-broker.service >/dev/null 2>&1
    bx systemctl clean --what=fdstore mcp-exec-broker.service >/dev/null 2>&1 || true
    bx rm -f "$IDLE_DROPIN"
    bx systemctl daemon-reload
}
bx mkdir -p "${IDLE_DROPIN%/*}"
printf '[Service]\nExecStart=\nExecStart=/usr/libexec/mcp-exec/mcp-exec-brokerd --idle-exit-sec=2\n' |
    bx tee "$IDLE_DROPIN" >/dev/null
at_exit idle_dropin_off
bx systemctl daemon-reload
preserve=$(bx systemctl show -P FileDescriptorStorePreserve mcp-exec-broker.service 2>/dev/null || true)
sdver=$(bx systemctl --version | awk 'NR == 1 { print $2 }')
log "systemd $sdver, the broker's FileDescriptorStorePreserve=${preserve:-(unknown to it)}"
if ((sdver >= 254)); then
    [[ $preserve == yes ]] || fail "systemd $sdver keeps fd stores, but the broker's unit does not ask for it"
fi
IDLE_CONF=(MCP_EXEC_POOL_SIZE=1 MCP_EXEC_PRELOAD=json MCP_EXEC_POOL_IDLE_S=12)
broker_gone() { [[ $(bx systemctl show -P ActiveState mcp-exec-broker.service) == inactive ]]; }
# fill_and_idle: a run starts the broker, one warm unit gets ready, the broker exits idle; sets w.
fill_and_idle() {
    out=$(call -- 'print(1)') || fail "a run to start the broker failed: $(call_err)"
    wait_for 30 pool_full 1 || fail "the pool did not fill: $(all_units)"
    w=$(ready_units)
    wait_for 40 broker_gone || fail "the broker did not exit idle"
}
# run_on RESULT: the unit the run of RESULT ran in.
run_on() { echo "mcp-exec-run-$(jget "$1" 'r.get("run_id") or ""').service"; }
stored_dropped() { broker_log "$cur" | grep -q "Stored warm unit $1 not used"; }
# bash_fill: a bash call makes bash's pool (issue 42); its one unit gets ready; sets b.
bash_ready() { units_described 'mcp-exec warm unit \(idle\) bash' --all; }
bash_fill() {
    out=$(call --language bash -- 'echo 1') || fail "a bash run failed: $out $(call_err)"
    wait_for 30 eval '[[ $(bash_ready | grep -c .) == 1 ]]' || fail "bash's pool did not fill: $(all_units)"
    b=$(bash_ready)
}

set_config "${IDLE_CONF[@]}"
cur=$(journal_cursor)
fill_and_idle
if [[ $preserve != yes ]]; then
    wait_for 15 eval '[[ $(bx systemctl show -P ActiveState "$w") == inactive ]]' ||
        fail "warm unit $w outlived the broker's idle exit on a systemd that does not keep the fd store"
    out=$(call -- 'print(6*7)') || fail "the first run after the idle exit failed: $(call_err)"
    jcheck "$out" 'r["stdout"] == "42\n"' "the first run after the idle exit did not work"
    log "systemd $sdver: warm unit $w stopped with the broker, the next run served"
    bash_fill
    wait_for 40 broker_gone || fail "the broker did not exit idle"
    wait_for 15 eval '[[ $(bx systemctl show -P ActiveState "$b") == inactive ]]' ||
        fail "bash's warm unit $b outlived the broker's idle exit on a systemd that does not keep the fd store"
    log "systemd $sdver: bash's warm unit $b stopped with the broker"
    assert_clean 15
    pass
fi
[[ $(bx systemctl show -P ActiveState "$w") == active ]] || fail "warm unit $w did not outlive the broker's idle exit"
# (journald may take a moment with the last words of a broker that is gone, under load.)
kept_said() { broker_log "$cur" | grep -q "$1"; }
wait_for 15 kept_said 'kept in the fd store' || fail "the broker did not say it kept its warm unit"
out=$(call -- 'print(6*7)') || fail "the first run after the idle exit failed: $(call_err)"
jcheck "$out" 'r["stdout"] == "42\n"' "the first run after the idle exit did not work"
[[ $(run_on "$out") == "$w" ]] || fail "the first run after the idle exit ran in $(run_on "$out"), not in the kept $w"
was_warm "$out" || fail "the first run after the idle exit was not reported warm"
log "warm unit $w kept across the idle exit served the first run after it"

# Stored, then the configuration changed (the file only: a stop of the broker would stop the unit,
# below): not used, stopped.
fill_and_idle
cur=$(journal_cursor)
printf '%s\n' "${IDLE_CONF[@]}" MCP_EXEC_MEMORY_MAX=200M >"$BOXROOT$CONF"
out=$(call -- 'print(6*7)') || fail "a run after a configuration change failed: $(call_err)"
jcheck "$out" 'r["stdout"] == "42\n"' "a run after a configuration change did not work"
[[ $(run_on "$out") != "$w" ]] || fail "a warm unit stored before a configuration change served a run"
wait_for 10 stored_dropped "$w" || fail "the broker did not say it dropped the stale $w"
wait_for 15 eval '[[ $(bx systemctl show -P ActiveState "$w") == inactive ]]' || fail "the stale warm unit $w was left running"

# Stored, then its unit stopped: not used (systemd drops a stored socket that hangs up; the state
# that still names the unit is not enough).
fill_and_idle
bx systemctl stop "$w"
cur=$(journal_cursor)
out=$(call -- 'print(6*7)') || fail "a run after a stored unit was stopped failed: $(call_err)"
jcheck "$out" 'r["stdout"] == "42\n"' "a run after a stored unit was stopped did not work"
[[ $(run_on "$out") != "$w" ]] || fail "a stopped stored warm unit served a run"
broker_log "$cur" | grep -q "Warm unit $w, kept across the idle exit, is back" && fail "a stopped $w was taken back"

# A language's pool, kept as Python's: bash's ready unit outlives the idle exit, and comes back into
# bash's pool only: a javascript or python run never gets it (another interpreter, another seccomp
# filter: JavaScript's has no W^X), the next bash run does.
# (The cursor first: on a loaded machine the broker may be gone, its words said, before
# bash_fill returns.)
cur=$(journal_cursor)
bash_fill
wait_for 40 broker_gone || fail "the broker did not exit idle"
[[ $(bx systemctl show -P ActiveState "$b") == active ]] || fail "bash's warm unit $b did not outlive the idle exit"
wait_for 15 kept_said 'warm unit(s) of bash kept in the fd store' ||
    fail "the broker did not say it kept bash's warm unit: $(journal_since "$cur" -u mcp-exec-broker.service | tail -8)"
cur=$(journal_cursor)
out=$(call --language javascript -- 'console.log(6*7)') ||
    fail "a javascript run after the idle exit failed: $(call_err)"
jcheck "$out" 'r["stdout"] == "42\n"' "a javascript run after the idle exit did not work"
[[ $(run_on "$out") != "$b" ]] || fail "bash's kept warm unit $b was given a javascript run"
out=$(call -- 'print(6*7)') || fail "a python run after the idle exit failed: $(call_err)"
jcheck "$out" 'r["stdout"] == "42\n"' "a python run after the idle exit did not work"
[[ $(run_on "$out") != "$b" ]] || fail "bash's kept warm unit $b was given a python run"
out=$(call --language bash -- 'echo $((6*7))') || fail "a bash run after the idle exit failed: $(call_err)"
jcheck "$out" 'r["stdout"] == "42\n"' "a bash run after the idle exit did not work"
[[ $(run_on "$out") == "$b" ]] || fail "the bash run after the idle exit ran in $(run_on "$out"), not in the kept $b"
was_warm "$out" || fail "the bash run on the kept $b was not reported warm"
wait_for 15 kept_said "Warm unit $b, kept across the idle exit, is back in the pool" ||
    fail "the broker did not say bash's $b is back in the pool"
log "bash's warm unit $b kept across the idle exit served the next bash run, and no other"
# Stored, then the configuration changed: bash's unit is stale as Python's is, stopped, not used.
bash_fill
wait_for 40 broker_gone || fail "the broker did not exit idle"
cur=$(journal_cursor)
printf '%s\n' "${IDLE_CONF[@]}" MCP_EXEC_MEMORY_MAX=190M >"$BOXROOT$CONF"
out=$(call --language bash -- 'echo $((6*7))') || fail "a bash run after a configuration change failed: $(call_err)"
jcheck "$out" 'r["stdout"] == "42\n"' "a bash run after a configuration change did not work"
[[ $(run_on "$out") != "$b" ]] || fail "bash's warm unit stored before a configuration change served a run"
wait_for 10 stored_dropped "$b" || fail "the broker did not say it dropped bash's stale $b"
wait_for 15 eval '[[ $(bx systemctl show -P ActiveState "$b") == inactive ]]' ||
    fail "bash's stale unit $b was left running"

# Stored, then the broker stopped by hand: its kept units stop too (PartOf=), as runs always did.
fill_and_idle
bx systemctl stop mcp-exec-broker.service >/dev/null 2>&1
wait_for 15 eval '[[ $(bx systemctl show -P ActiveState "$w") == inactive ]]' ||
    fail "a kept warm unit $w outlived a stop of the broker"
pass
