#!/usr/bin/env bash
# Bash and JavaScript beside Python (issue 42), on the same units with the same guarantees:
#   runs      through the broker (mcp-exec-broker-call --language bash): print and exit code,
#             stdin, the uid (a dynamic one), no network, no writes outside /tmp, input files in
#             /tmp, files and an SVG from /tmp/outputs, a PNG written with base64 -d (an image
#             of its size), the code in no argv; the output cap, the memory cap, a fork bomb, a
#             busy loop whose backgrounded child survives setsid, nohup and disown: all end,
#             nothing is left; /proc of another run is not seen; cold (the language's first
#             run) and warm (its pool, made at that run); a JavaScript run
#   clients   over stdio (mcp-exec run --language bash, and a #! line; the v1 SDK; the Inspector
#             CLI with each language) and over HTTP (the v2 client): exec with language bash; an
#             unknown language is an isError naming what the server has; a bash session keeps
#             variables, functions and the working directory across calls made on new
#             connections, each call has its own stdin, exit ends a call and not the session,
#             its language is fixed; a JavaScript session keeps its global scope (top-level
#             await)
#   off       MCP_EXEC_LANGUAGES=python: bash is refused, naming python
# Without Node >= 20 in the box (Debian 12's own nodejs is 18) the real clients' part is left out,
# and says so; everything else runs, JavaScript on that node included.
. "$(dirname "$0")/../../lib/itest.sh"
NODE_CLIENTS_OPTIONAL=1
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/sessions.sh"

fresh
cursor=$(journal_cursor)

# bcall CODE [broker-call options]: a bash run through the broker.
bcall() {
    local code=$1
    shift
    call --language bash --result-channel "$@" -- "$code"
}

# --- runs ------------------------------------------------------------------------------------
log "== runs"
CANARY=BASHCANARY$RANDOM$RANDOM
out=$(bcall "# $CANARY
echo hello; echo oops >&2; tr a-z A-Z; id -u; cat /proc/self/cmdline | tr '\\0' ' '; echo; exit 3" \
    --stdin-file "$(printf 'from stdin\n' | put stdin.txt)") || fail "run failed: $out $(call_err)"
jcheck "$out" 'r["exit_code"] == 3 and r["stdout"].startswith("hello\nFROM STDIN\n") and r["stderr"] == "oops\n"' \
    "print, stdin and exit code"
uid=$(jget "$out" 'r["stdout"].split("\n")[2]')
((uid >= 61184 && uid <= 65519)) || fail "the run's uid is $uid, not a dynamic one"
jcheck "$out" "'$CANARY' not in r['stdout']" "the code is in the program's argv"

out=$(bcall 'exec 3<>/dev/tcp/1.1.1.1/53 && echo NET-TCP; getent hosts example.com && echo NET-DNS
for d in /etc /usr /root /run /var/lib; do touch "$d/mcp-x" 2>/dev/null && echo "WROTE $d"; done
touch /tmp/ok && echo TMP-OK; echo "$HOME $PWD"') || fail "run failed: $out $(call_err)"
jcheck "$out" '"NET-" not in r["stdout"] and "WROTE" not in r["stdout"] and "TMP-OK\n/tmp /tmp\n" in r["stdout"]' \
    "network or writes outside /tmp"

out=$(bcall 'cat data.txt; mkdir -p /tmp/outputs; wc -c < data.txt > /tmp/outputs/count.txt
printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\"><rect width=\"2\" height=\"2\"/></svg>" \
    > /tmp/outputs/plot.svg' --file "data.txt=$(printf 'input file\n' | put data.txt)") ||
    fail "run failed: $out $(call_err)"
jcheck "$out" 'r["stdout"] == "input file\n" and sorted((o["path"], o["mimeType"]) for o in r["outputs"]) == [
    ("/tmp/outputs/count.txt", "text/plain"), ("/tmp/outputs/plot.svg", "image/svg+xml")]' "input files and outputs"

# A PNG written by a shell tool is a figure (an image of its size), as matplotlib's are for Python.
out=$(bcall 'mkdir -p /tmp/outputs
echo iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAAAAACcgYFdAAAAC0lEQVR4nGNggAIAAAkAAftSuKkAAAAASUVORK5CYII= |
    base64 -d > /tmp/outputs/dot.png') || fail "run failed: $out $(call_err)"
jcheck "$out" '[(o["path"], o["mimeType"], o["width"], o["height"]) for o in r["outputs"]] == [
    ("/tmp/outputs/dot.png", "image/png", 2, 3)]' "a PNG from bash"

out=$(bcall 'yes 0123456789 | head -c 5000000' --max-output 1000) || fail "run failed: $out $(call_err)"
jcheck "$out" 'r["truncated"] and len(r["stdout"]) <= 1000' "the output cap"

# The shell itself grows (a command substitution): as in Python, the program is what is killed.
out=$(bcall 's=$(head -c 1100M /dev/zero | tr "\0" a); echo SURVIVED' --timeout 60) ||
    fail "run failed: $out $(call_err)"
jcheck "$out" '"SURVIVED" not in r["stdout"] and r["oom_killed"] is True' "the memory cap"

out=$(bcall 'f() { f | f & }; f; sleep 5' --timeout 10) || fail "fork bomb: $out $(call_err)"
log "fork bomb: $(jget "$out" '[r["exit_code"], r["timed_out"], r["signal"]]')"
assert_clean 20

# A busy loop whose child got away (setsid, nohup, disown) and says where it is; a second run
# looks for it in /proc while it lives.
MARK=bashmark$RANDOM$RANDOM
bcall "setsid nohup bash -c 'exec -a $MARK sleep 300' </dev/null >/dev/null 2>&1 & disown
while :; do :; done" --timeout 3 >"$HDIR/busy.json" &
busy=$!
sleep 1.5
# (A bracket, so that the grep's own command line does not match; its own such child it sees.)
out=$(bcall "bash -c 'exec -a own$MARK sleep 30' & sleep 0.2
for m in $MARK own$MARK; do grep -al \"^\${m:0:1}[\${m:1:1}]\${m:2}\" /proc/[0-9]*/cmdline 2>/dev/null | wc -l; done") ||
    fail "run failed: $out $(call_err)"
jcheck "$out" 'r["stdout"] == "0\n1\n"' "a run sees another run's process in /proc (or not its own)"
wait "$busy"
out=$(cat "$HDIR/busy.json")
jcheck "$out" 'r["timed_out"] is True' "the busy loop did not time out"
wait_for 15 no_run_units || fail "run units left after the timeout: $(run_units --all)"
[[ -z $(bx pgrep -f "$MARK") ]] || fail "the setsid/nohup/disown child survived its run's timeout"
assert_clean 15

# Cold, then warm: the language's pool starts at its first run.
jsince=$(journal_since "$cursor" -u mcp-exec-broker.service -o json)
"$PY" -c '
import json, sys
w = {e.get("MCP_WARM") for e in map(json.loads, sys.stdin) if e.get("MCP_LANGUAGE") == "bash"}
sys.exit(0 if {"0", "1"} <= w else 1)' <<<"$jsince" || fail "bash runs were not both cold and warm"
journal_since "$cursor" -u mcp-exec-broker.service | grep -q 'Warm pool of [0-9]* bash units' ||
    fail "no warm pool of bash units"

# JavaScript (node's bootstrap) on the same path: print, stdin, exit code, an output file.
out=$(call --language javascript --result-channel --stdin-file "$(printf 'js in\n' | put jsin.txt)" -- \
    'const fs = require("fs"); process.stdout.write(fs.readFileSync(0, "utf8").toUpperCase());
fs.mkdirSync("/tmp/outputs"); fs.writeFileSync("/tmp/outputs/o.txt", "x"); process.exitCode = 6;') ||
    fail "javascript run failed: $out $(call_err)"
jcheck "$out" 'r["exit_code"] == 6 and r["stdout"] == "JS IN\n" and [o["path"] for o in r["outputs"]] == [
    "/tmp/outputs/o.txt"]' "a javascript run"
# An ES module importing an input file from /tmp (node's resolve hook runs on a thread of its own,
# in the sandbox's filter).
out=$(call --language javascript --result-channel --file "lib.mjs=$(printf 'export default 41;\n' | put lib.mjs)" -- \
    'import x from "./lib.mjs"; import { sep } from "node:path"; console.log(x + 1, sep);') ||
    fail "javascript ES module run failed: $out $(call_err)"
jcheck "$out" 'r["exit_code"] == 0 and r["stdout"] == "42 /\n"' "an ES module importing an input file"

# --- clients ---------------------------------------------------------------------------------
log "== clients"
out=$(printf 'echo "$((6*7))"; exit 5\n' | bx timeout 60 mcp-exec run --language bash 2>&1)
rc=$?
[[ $out == 42 && $rc == 5 ]] || fail "mcp-exec run --language bash: $rc $out"
printf '#!/usr/bin/env bash\necho "shebang $BASH_VERSION" | cut -c1-8\n' | put script.sh >/dev/null
out=$(bx timeout 60 mcp-exec run "$BDIR/script.sh" </dev/null 2>&1) && [[ $out == 'shebang ' ]] ||
    fail "a #!/usr/bin/env bash file did not run as bash: $out"

# clients_part: the real MCP clients' calls (Node >= 20).
clients_part() {
    for kind in stdio http; do
        out=$(scall "$kind" exec '{"code":"echo $((6*7)); echo ${BASH_VERSINFO[0]}","language":"bash"}')
        jcheck "$out" 'r.get("isError") is False and r["structuredContent"]["stdout"].startswith("42\n")' "$kind exec"
        out=$(scall "$kind" exec '{"code":"print(1)","language":"cobol"}')
        jcheck "$out" 'r.get("isError") is True and "python,bash,javascript" in r["content"][0]["text"]' \
            "$kind: unknown language"
        out=$(scall "$kind" session_create '{"language":"javascript"}')
        h=$(handle_of "$out")
        [[ -n $h ]] || fail "$kind: session_create javascript: $out"
        out=$(scall "$kind" exec "$(exec_args 'globalThis.x = 41; var y = await Promise.resolve(1);' "$h")")
        out=$(scall "$kind" exec "$(exec_args 'console.log(x + y)' "$h")")
        stdout_is "$out" "42" "$kind: a javascript session's global scope"
        scall "$kind" session_close "{\"session\":\"$h\"}" >/dev/null

        out=$(scall "$kind" session_create '{"language":"bash"}')
        h=$(handle_of "$out")
        [[ -n $h ]] || fail "$kind: session_create bash: $out"
        out=$(scall "$kind" exec "$(exec_args 'x=41; f() { echo f$1; }; mkdir -p /tmp/d; cd /tmp/d; exit 4' "$h")")
        jcheck "$out" 'r["structuredContent"]["exit_code"] == 4 and not r["structuredContent"]["session_lost"]' \
            "$kind: exit in a session"
        out=$(scall "$kind" exec "$(exec_args 'echo $((x+1)) $(f 2) $PWD' "$h")")
        stdout_is "$out" "42 f2 /tmp/d" "$kind: the session's state"
        out=$(scall "$kind" exec "$(printf '{"code":"tr a-z A-Z; cat","session":"%s","stdin":"call stdin"}' "$h")")
        jcheck "$out" 'r["structuredContent"]["stdout"] == "CALL STDIN"' "$kind: a session call's stdin"
        out=$(scall "$kind" exec "$(printf '{"code":"print(1)","session":"%s","language":"python"}' "$h")")
        jcheck "$out" 'r.get("isError") is True and "runs bash" in r["content"][0]["text"]' "$kind: a session's language"
        out=$(scall "$kind" session_close "{\"session\":\"$h\"}")
        jcheck "$out" 'r.get("isError") is False' "$kind: session_close"
    done
    # The Inspector CLI, stdio: each language.
    for l in bash javascript; do
        code=$([[ $l == bash ]] && echo 'echo $((6*7))' || echo 'console.log(6*7)')
        out=$(inspector --method tools/call --tool-name exec \
            --tool-args-json "$("$PY" -c 'import json, sys; print(json.dumps({"code": sys.argv[1], "language": sys.argv[2]}))' \
                "$code" "$l")" --format json -q -- mcp-exec stdio 2>"$HDIR/insp.err")
        out=$("$PY" -c 'import json, sys; s = sys.stdin.read(); r = json.loads(s[s.index("{"):]); print(json.dumps(r.get("result", r)))' \
            <<<"$out") || fail "inspector exec $l: no result: $(head -c 500 "$HDIR/insp.err")"
        jcheck "$out" 'r.get("isError") is False and r["structuredContent"]["stdout"] == "42\n"' "inspector exec $l"
    done
}
if ((HAVE_NODE_CLIENTS)); then
    clients_part
else
    log "clients: the real clients' part left out: $NO_NODE_CLIENTS"
fi
after clients

# --- off -------------------------------------------------------------------------------------
log "== off"
fresh MCP_EXEC_LANGUAGES=python
if ((HAVE_NODE_CLIENTS)); then
    out=$(scall stdio exec '{"code":"echo hi","language":"bash"}')
    jcheck "$out" 'r.get("isError") is True and "it has python" in r["content"][0]["text"]' "bash turned off"
fi
out=$(printf 'echo hi\n' | bx timeout 60 mcp-exec run --language bash 2>&1) &&
    fail "mcp-exec run --language bash ran with bash turned off: $out"
[[ $out == *"it has python"* ]] || fail "mcp-exec run --language bash, turned off: $out"
out=$(call --language bash -- 'echo hi')
jcheck "$out" '"turned off" in json.dumps(r)' "the broker runs bash while it is turned off"
fresh
pass
