#!/usr/bin/env bash
# stdin arrives intact: 200 KB of random printable text is echoed back exactly through
# sys.stdin.read(); the code itself is not visible in sys.argv or /proc/self/cmdline.
. "$(dirname "$0")/../../lib/itest.sh"

CANARY=CODECANARY$RANDOM$RANDOM$RANDOM
"$PY" -c '
import random, string, sys
alphabet = string.ascii_letters + string.digits + string.punctuation + " \t\n"
rnd = random.SystemRandom()
sys.stdout.write("".join(rnd.choice(alphabet) for _ in range(200 * 1024)))
' >"$HDIR/stdin.txt"
chmod 0644 "$HDIR/stdin.txt"
[[ $(stat -c %s "$HDIR/stdin.txt") -eq 204800 ]] || fail "could not make the stdin file"

code="# $CANARY
import sys, os, hashlib
data = sys.stdin.read()
sys.stdout.write(data)
sys.stderr.write('ARGV %r\n' % (sys.argv,))
sys.stderr.write('CMDLINE %r\n' % (open('/proc/self/cmdline', 'rb').read(),))
sys.stderr.write('ENV %r\n' % (sorted(os.environ.items()),))
"
out=$(call --timeout 30 --max-output 1M --stdin-file "$BDIR/stdin.txt" -- "$code") ||
    fail "run failed: $(head -c 2000 <<<"$out") $(call_err)"
jcheck "$out" '"error" not in r and r["exit_code"] == 0 and not r["truncated"]' "the run failed"
jget "$out" 'r["stdout"]' >"$HDIR/echo.txt"
if ! cmp -s "$HDIR/stdin.txt" "$HDIR/echo.txt"; then
    fail "stdout differs from stdin: $(cmp "$HDIR/stdin.txt" "$HDIR/echo.txt" 2>&1; stat -c '%n %s' "$HDIR/stdin.txt" "$HDIR/echo.txt")"
fi
err=$(jget "$out" 'r["stderr"]')
log "$(grep -E '^(ARGV|CMDLINE)' <<<"$err")"
grep -q '^ARGV ' <<<"$err" || fail "the code's diagnostics are missing: $err"
if grep -q "$CANARY" <<<"$err"; then
    fail "the code is visible to itself through argv, cmdline or environment: $err"
fi

# Code that does not read its stdin (more than a pipe holds) still gets a result: the client
# must cope with the stdin pipe closing under it (EPIPE, not death by SIGPIPE).
out=$(call --timeout 30 --stdin-file "$BDIR/stdin.txt" -- 'print("not reading stdin")')
rc=$?
((rc != 141)) || fail "broker-call was killed by SIGPIPE when the code did not read its 200 KB stdin"
((rc == 0)) || fail "run with unread stdin failed ($rc): $out $(call_err)"
jcheck "$out" '"error" not in r and r["exit_code"] == 0 and r["stdout"] == "not reading stdin\n"' \
    "a run that does not read its stdin failed"
pass
