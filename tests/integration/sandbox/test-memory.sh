#!/usr/bin/env bash
# Memory limit: touching 1 GiB gets the run killed and reported as oom_killed; the box and the
# broker survive and the next run works.
# Plain pass only: MemoryMax= and the OOM kill are the kernel's, set by systemd.
. "$(dirname "$0")/../../lib/itest.sh"

code='import sys
print("allocating", flush=True)
b = bytearray(1 << 30)
for i in range(0, len(b), 4096):
    b[i] = 1
print("SURVIVED 1 GiB", flush=True)
'
out=$(call --timeout 60 -- "$code") || fail "run failed: $out $(call_err)"
log "result: $out"
jcheck "$out" '"error" not in r' "the run produced no result"
jcheck "$out" '"SURVIVED" not in r["stdout"]' "1 GiB could be allocated and touched"
jcheck "$out" 'r["exit_code"] != 0 and not r["timed_out"]' "the run was not killed for its memory"
jcheck "$out" 'r["cpu_ms"] is None or isinstance(r["cpu_ms"], int)' "cpu_ms is neither null nor a number"
jcheck "$out" 'r["memory_peak_bytes"] is None or isinstance(r["memory_peak_bytes"], int)' \
    "memory_peak_bytes is neither null nor a number"
assert_runs_work
assert_clean 10
jcheck "$out" 'r["oom_killed"] is True' "oom_killed is not true for a run killed by its memory limit"
pass
