#!/usr/bin/env bash
# Identity and file system view: code runs as a dynamic, per-run uid (never 0; two concurrent
# runs get different uids); /usr and /etc are read-only; /home and /root are hidden.
# Plain pass only: DynamicUser= and the read-only file system are systemd's.
. "$(dirname "$0")/../../lib/itest.sh"

# Something that would be visible in /home and /root if they were not hidden.
mkdir -p "$BOXROOT/home/mcp-test-user-$$"
chmod 0755 "$BOXROOT/home" "$BOXROOT/home/mcp-test-user-$$"
echo secret >"$BOXROOT/root/mcp-test-secret-$$"
at_exit "rm -rf '$BOXROOT/home/mcp-test-user-$$' '$BOXROOT/root/mcp-test-secret-$$'"

code='import os, json, time
res = {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups()}
for d in ("/usr", "/etc", "/usr/local", "/var/lib"):
    p = os.path.join(d, "mcp-test-write-%d" % os.getpid())
    try:
        with open(p, "w") as f:
            f.write("x")
        res["write " + d] = "OK"
    except OSError as e:
        res["write " + d] = e.errno
    res["ro " + d] = bool(os.statvfs(d).f_flag & os.ST_RDONLY)
for d in ("/home", "/root"):
    try:
        res["list " + d] = os.listdir(d)
    except OSError as e:
        res["list " + d] = e.errno
time.sleep(1.5)
print(json.dumps(res))
'
out=$(call --timeout 20 --parallel 2 --count 2 -- "$code") || fail "runs failed: $out $(call_err)"
[[ $(grep -c . <<<"$out") -eq 2 ]] || fail "expected 2 results, got: $out"
jcheck "$out" 'r["exit_code"] == 0 and "error" not in r' "a run did not complete"
res=$("$PY" -c '
import json, sys
for l in sys.stdin:
    if l.strip():
        print(json.loads(l)["stdout"].strip())' <<<"$out")
log "sandbox says: $res"
"$PY" - "$res" "$DYN_UID_MIN" "$DYN_UID_MAX" <<'PYEOF' || fail "identity/file system checks failed"
import errno, json, sys
rs = [json.loads(l) for l in sys.argv[1].splitlines()]
lo, hi = int(sys.argv[2]), int(sys.argv[3])
bad = []
for r in rs:
    if r["uid"] == 0 or r["euid"] == 0 or r["gid"] == 0 or 0 in r["groups"]:
        bad.append("runs as root (uid/gid 0): %r" % r)
    if not lo <= r["uid"] <= hi:
        bad.append("uid %d is not a dynamic uid (%d..%d)" % (r["uid"], lo, hi))
    for d in ("/usr", "/etc", "/usr/local", "/var/lib"):
        if r["write " + d] == "OK":
            bad.append("could write to %s" % d)
        if not r["ro " + d]:
            bad.append("%s is not mounted read-only" % d)
    for d in ("/home", "/root"):
        v = r["list " + d]
        if isinstance(v, list) and v:
            bad.append("%s is listable: %r" % (d, v))
if len(rs) == 2 and rs[0]["uid"] == rs[1]["uid"]:
    bad.append("two concurrent runs share uid %d" % rs[0]["uid"])
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PYEOF
# Nothing was written behind the sandbox's back.
if ls "$BOXROOT"/usr/mcp-test-write-* "$BOXROOT"/etc/mcp-test-write-* >/dev/null 2>&1; then
    fail "a test file appeared in /usr or /etc"
fi
pass
