#!/usr/bin/env bash
# Code mode end to end (issue 40): a run's Python calls another MCP server's tools through
# mcp_servers, with every piece real: the operator's servers.d, the generator's units for the
# npm server-everything, server-memory and server-filesystem (pinned in tests/node-clients),
# mcp-exec-toolsd, the broker's tools link and the launcher's fd. Checks: the code chains 200
# calls and 20 concurrent async ones and returns only its summary; one run joins server-memory's
# graph and 50 of everything's get-sum and prints only the summary; the filesystem server's read tools
# work on a directory the test makes, its write_file (CONFIRMED) writes, its other destructive
# tools (annotations) and server-memory's delete_entities are refused as Refused and change nothing; an
# MCP client that declared elicitation (the v1 SDK's) is asked to confirm edit_file, over Streamable HTTP
# and stdio: its accept lets the edit through, its decline refuses it and nothing changes, and the question
# names the server and tool and not the arguments (a sandbox session's call too, over HTTP; an exec made
# a task too, input_required while asked, the question on its tasks/result; a 2026-07-28 task by
# inputRequests and tasks/update, raw and with the v2 client's ext-tasks; a plain 2026-07-28 call by
# InputRequiredResult and a retry, raw and with the v2 client's driver); a client
# without the capability, and a run without an
# MCP client, get Refused saying why; the journal says how each was confirmed, without the arguments; a
# run's answers stop at MAX_BYTES; async calls are in flight at once (echoes answered while three
# long calls still run), and those in flight when the run ends are cancelled then (journal), not
# at CALL_TIMEOUT_S; an exec made a task calls tools as a run does;
# a server whose CALLERS do not list the caller is refused to the code
# and left out of the exec tool's description (which names the other, in the operator's words);
# a tool the server's TOOLS leaves out is refused, and the server's credential is nowhere in
# the run (output, environment, files); the result's tool_calls counts the calls; the 222nd call
# of a run stops at MAX_CALLS=221 (get-env, refused, is the 221st); the run cannot reach the
# gateway's or an upstream's
# socket by path (only its own connection); a warm unit (started before servers.d was written)
# gets its tools as a cold one does; a sandbox session keeps one tools connection for its calls,
# and each call's result counts its own tool calls; mcp_servers is imported from byte code made
# at install, which a run cannot write; /metrics over HTTP counts the tool calls per
# server and outcome; the attack cases tests/attacks/tools-*.py (garbage, a huge frame, deep
# JSON, forged caller fields, a call flood, other fd numbers, calls after the run's end), over
# stdio and HTTP, leave the gateway alive (one pid), its RSS bounded, no call journaled after a
# run's end, and another run's calls working; and with servers.d empty again a run gets no tools
# and says so clearly. With a build that has mcp-exec-upstream-http (libcurl), a Streamable HTTP
# server too: server-everything in its streamableHttp mode on loopback in the box, behind
# tests/lib/http-auth-proxy.py, which wants the X-Api-Key that the server's credential holds
# (CREDENTIAL_HEADERS): a run calls its echo and get-sum through mcp_servers; the same URL without
# the header is refused by the proxy and the code gets UpstreamError; the credential is in no run
# output, unit property, generated unit or journal; the gateway keeps PrivateNetwork=yes.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/attack-cases.sh"
URL=http://127.0.0.1:8080
bx sh -c 'command -v curl' >/dev/null || skip "no curl in the box"
. "$ITEST_DIR/lib/http.sh"

SD=/etc/mcp-exec/servers.d
NODE=$(upstream_node)
[[ $NODE == /* ]] || skip "MCP_TEST_NODE=$NODE is not an absolute path, which COMMAND= needs"
case $NODE in
/home/* | /root/*) skip "MCP_TEST_NODE=$NODE is under /home or /root, which ProtectHome= hides from the upstream units" ;;
esac
node_modules=$(upstream_clients_dir)/node_modules/@modelcontextprotocol
everything=$node_modules/server-everything/dist/index.js
memory=$node_modules/server-memory/dist/index.js
filesystem=$node_modules/server-filesystem/dist/index.js
for f in "$everything" "$memory" "$filesystem"; do
    bx test -f "$f" || fail "no $f in the box"
done
# The filesystem server's directory: made by the test, read-only to the server's unit
# (ProtectSystem=strict), outside /tmp (the unit's own) and /home (ProtectHome=).
FSDIR=/srv/mcp-test-fs-$RANDOM

CANARY="mcp-canary-code-mode-$RANDOM$RANDOM"
HTTP_CANARY="mcp-canary-http-header-$RANDOM$RANDOM"
HTTP_PORT=$((20000 + RANDOM % 5000))
PROXY_PORT=$((HTTP_PORT + 5000))
bx test -x /usr/libexec/mcp-exec/mcp-exec-upstream-http && have_http=1 || have_http=0
cleanup() {
    bx sh -c 'rm -f /etc/mcp-exec/servers.d/everything.conf /etc/mcp-exec/servers.d/memory.conf \
                    /etc/mcp-exec/servers.d/graph.conf /etc/mcp-exec/servers.d/fs.conf /etc/credstore/mcp-test-cm.token
              rm -f /etc/mcp-exec/servers.d/web.conf /etc/mcp-exec/servers.d/webnokey.conf /etc/credstore/mcp-test-http.token
              systemctl stop mcp-test-http-everything.service mcp-test-http-proxy.service
              rm -rf "$2"
              [ "$1" = 1 ] || rmdir /etc/mcp-exec/servers.d 2>/dev/null
              systemctl stop "mcp-exec-upstream-*.socket" "mcp-exec-upstream-*@*.service" mcp-exec-tools.service
              systemctl daemon-reload
              systemctl reset-failed "mcp-exec-upstream-*" mcp-exec-tools.service' sh "$had_sd" "$FSDIR" >/dev/null 2>&1
}
bx test -e "$SD" && had_sd=1 || had_sd=0
at_exit cleanup

# A warm unit from before servers.d existed: it must get its tools all the same.
assert_runs_work

bx mkdir -p "$SD"
printf '%s\n' "$CANARY" >"$BOXROOT/etc/credstore/mcp-test-cm.token"
chmod 0600 "$BOXROOT/etc/credstore/mcp-test-cm.token"
# get-env would show the server's environment, its credential included: the operator's TOOLS
# leaves it out, and that is what keeps the credential from the code.
cat >"$BOXROOT$SD/everything.conf" <<EOF2
DESCRIPTION="The MCP reference server (echo, get-sum)"
COMMAND="$NODE $everything stdio"
CREDENTIALS=tok:/etc/credstore/mcp-test-cm.token
CREDENTIAL_ENV=API_KEY=tok
TOOLS="echo get-sum trigger-long-running-operation"
MAX_CALLS=221
EOF2
# Not for this test's callers (uid:0 through the broker, uid:0 over stdio).
cat >"$BOXROOT$SD/memory.conf" <<EOF2
DESCRIPTION="The reference server for uid 4242 only"
COMMAND="$NODE $everything stdio"
CALLERS=uid:4242
EOF2
# The real memory server (as "graph"): its delete_* tools are annotated destructive, CONFIRMED lists none.
cat >"$BOXROOT$SD/graph.conf" <<EOF2
DESCRIPTION="A knowledge graph per caller"
COMMAND="$NODE $memory"
ENVIRONMENT=MEMORY_FILE_PATH=/tmp/memory.jsonl
EOF2
# The real filesystem server over the test's directory (read) and one in the instance's own /tmp,
# made by sh before the server starts (it wants its directories to exist): the only place its
# unit may write. write_file is confirmed, its other destructive tools are not.
cat >"$BOXROOT$SD/fs.conf" <<EOF2
DESCRIPTION="Files: the test's directory and the instance's /tmp/rw"
COMMAND="/bin/sh -c \"mkdir -p /tmp/rw && exec \$0 \$@\" $NODE $filesystem $FSDIR /tmp/rw"
CONFIRMED="write_file"
EOF2
bx sh -c 'mkdir -p -m 0755 "$1" && echo "made by the test" >"$1/hello.txt" && chmod 0644 "$1/hello.txt"' \
    sh "$FSDIR" || fail "cannot make $FSDIR"
if ((have_http)); then
    printf '%s\n' "$HTTP_CANARY" >"$BOXROOT/etc/credstore/mcp-test-http.token"
    chmod 0600 "$BOXROOT/etc/credstore/mcp-test-http.token"
    bx systemd-run --quiet --unit=mcp-test-http-everything -p "Environment=PORT=$HTTP_PORT" \
        "$NODE" "$everything" streamableHttp || fail "cannot start server-everything streamableHttp"
    bx systemd-run --quiet --unit=mcp-test-http-proxy "$PY" "$ITEST_DIR/lib/http-auth-proxy.py" \
        "$PROXY_PORT" "$HTTP_PORT" /etc/credstore/mcp-test-http.token || fail "cannot start the proxy"
    http_up() {
        [[ $(bx curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HTTP_PORT/mcp") == 400 &&
            $(bx curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PROXY_PORT/mcp") == 401 ]]
    }
    wait_for 30 http_up || fail "server-everything (port $HTTP_PORT) or its proxy ($PROXY_PORT) does not answer"
    cat >"$BOXROOT$SD/web.conf" <<EOF2
DESCRIPTION="server-everything over Streamable HTTP"
URL=http://127.0.0.1:$PROXY_PORT/mcp
CREDENTIALS=key:/etc/credstore/mcp-test-http.token
CREDENTIAL_HEADERS=X-Api-Key=key
TOOLS="echo get-sum"
EOF2
    printf 'URL=http://127.0.0.1:%s/mcp\n' "$PROXY_PORT" >"$BOXROOT$SD/webnokey.conf"
fi
chmod 0644 "$BOXROOT$SD"/*.conf
bx systemctl daemon-reload || fail "daemon-reload failed"
bx systemctl start sockets.target || fail "cannot start sockets.target"
# The gateway reads servers.d when it starts.
bx systemctl stop mcp-exec-tools.service 2>/dev/null
bx systemctl start mcp-exec-tools.socket || fail "cannot start mcp-exec-tools.socket"
bx systemctl is-active --quiet mcp-exec-upstream-everything.socket || fail "no upstream socket for everything"

CODE='import asyncio, os, socket, mcp_servers
from mcp_servers import everything
names = mcp_servers.servers()
assert "everything" in names and "memory" not in names, names
outs = [everything.echo(message="m%d" % i) for i in range(200)]
assert all("m%d" % i in str(o) for i, o in enumerate(outs)), outs[:3]
async def many():
    return await asyncio.gather(*[everything.echo_async(message="a%d" % i) for i in range(20)])
res = asyncio.run(many())
assert all("a%d" % i in str(r) for i, r in enumerate(res)), res[:3]
try:
    everything.call("get-env")
    print("get-env: allowed")
except mcp_servers.ToolCallError as e:
    print("get-env:", type(e).__name__)
try:
    everything.echo(message="one too many")
    print("limit: none")
except mcp_servers.LimitReached:
    print("limit: LimitReached")
try:
    mcp_servers.call("memory", "echo", message="x")
    print("memory: reachable")
except mcp_servers.ToolCallError as e:
    print("memory:", type(e).__name__)
for path in ("/etc/credstore/mcp-test-cm.token", "/run/credentials"):
    try:
        print(path, os.listdir(path) if os.path.isdir(path) else open(path).read())
    except OSError as e:
        print(path, type(e).__name__)
print("env:", sorted(k for k in os.environ if "KEY" in k))
reached = []
for path in ("/run/mcp-exec/tools.sock", "/run/mcp-exec/upstream/everything.sock"):
    for kind in (socket.SOCK_SEQPACKET, socket.SOCK_STREAM):
        s = socket.socket(socket.AF_UNIX, kind)
        try:
            s.connect(path)
            reached.append(path)
        except OSError:
            pass
        s.close()
print("reached by path:", reached)
# The package is imported as byte code made at install (valid for its source), which a run
# cannot write.
import importlib.util
pyc = mcp_servers.__spec__.cached
st = os.stat(mcp_servers.__file__)
try:
    with open(pyc, "rb") as f:
        head = f.read(16)
except OSError:
    head = b""
flags = int.from_bytes(head[4:8], "little")
valid = head[:4] == importlib.util.MAGIC_NUMBER and (flags != 0 or (
    int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF and
    int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF))
try:
    open(pyc, "ab").close()
    writable = True
except OSError:
    writable = False
print("byte code: %s, writable: %s" % (valid, writable))
print("doc:", "message" in (everything.echo.__doc__ or "") or "echo" in (everything.echo.__doc__ or ""))
print("ok", len(outs), len(res))'

# --- a run: the warm unit that was waiting, then a cold one (the pool refills).
for which in first second; do
    out=$(call --timeout 60 -- "$CODE") || fail "$which run: $out $(call_err | head -5)"
    jcheck "$out" 'r["exit_code"] == 0' "$which run failed"
    jcheck "$out" '"ok 200 20" in r["stdout"]' "$which run: the calls did not all come back"
    jcheck "$out" '"memory: Refused" in r["stdout"]' "$which run: memory (CALLERS=uid:4242) was not refused"
    jcheck "$out" '"limit: LimitReached" in r["stdout"]' "$which run: call 222 passed MAX_CALLS=221"
    jcheck "$out" '"get-env: Refused" in r["stdout"]' "$which run: get-env, not in TOOLS, was not refused"
    [[ $out != *"$CANARY"* ]] || fail "$which run: the credential reached the run: $out"
    jcheck "$out" '"reached by path: []" in r["stdout"]' "$which run reached a socket by its path"
    jcheck "$out" '"byte code: True, writable: False" in r["stdout"]' \
        "$which run: mcp_servers has no valid byte code from the install, or the run can write it"
    jcheck "$out" 'r["tool_calls"]["everything"]["calls"] >= 220 and r["tool_calls"]["everything"]["errors"] == 0' \
        "$which run: tool_calls does not count the calls"
    log "$which run: tool_calls $(jget "$out" 'r["tool_calls"]')"
done

# --- a join of two real servers' results in one run, only its summary back: 50 entities made in
# the memory server ("graph"), read back as one graph, their numbers summed by 50 calls of
# everything's get-sum; the memory server's delete_entities (annotated destructive, not in CONFIRMED) refused.
out=$(call --timeout 60 -- 'import re, mcp_servers
from mcp_servers import everything, graph
graph.create_entities(entities=[{"name": "n%d" % i, "entityType": "number", "observations": [str(i * i)]}
                                for i in range(50)])
kg = graph.read_graph()
total = 0
for e in kg["entities"]:
    total = int(re.search(r"is (-?[0-9]+)", everything.get_sum(a=total, b=int(e["observations"][0]))).group(1))
try:
    graph.delete_entities(entityNames=["n0"])
    print("delete: allowed")
except mcp_servers.Refused as e:
    print("delete: Refused,", "CONFIRMED" in str(e))
print("join:", len(kg["entities"]), total)') || fail "the join run: $out $(call_err | head -5)"
jcheck "$out" 'r["exit_code"] == 0 and r["stdout"] == "delete: Refused, True\njoin: 50 40425\n"' \
    "the join of memory and everything did not give its summary alone"
jcheck "$out" '(r["tool_calls"]["graph"]["calls"] == 3 and r["tool_calls"]["graph"]["refused"] == 1 and
                r["tool_calls"]["everything"]["calls"] == 50)' "the join run's tool_calls"
log "join: $(jget "$out" 'r["stdout"].strip()') tool_calls $(jget "$out" 'r["tool_calls"]')"

# --- the real filesystem server: read tools work on the test's directory; write_file (in
# CONFIRMED) writes, a non-destructive create_directory works unconfirmed, edit_file and
# move_file (destructive, not in CONFIRMED) are refused with a clear exception and change nothing.
out=$(call --timeout 60 -- 'import mcp_servers
from mcp_servers import fs
def text(x):
    return x if isinstance(x, str) else x.get("content")
D = "'"$FSDIR"'"
print("read:", text(fs.read_text_file(path=D + "/hello.txt")).strip())
print("list:", "hello.txt" in text(fs.list_directory(path=D)))
fs.write_file(path="/tmp/rw/new.txt", content="written by the run")
print("written:", text(fs.read_text_file(path="/tmp/rw/new.txt")))
fs.create_directory(path="/tmp/rw/sub")
print("mkdir:", "sub" in text(fs.list_directory(path="/tmp/rw")))
for name, args in (("edit_file", {"path": "/tmp/rw/new.txt", "edits": [{"oldText": "written", "newText": "EDITED"}]}),
                   ("move_file", {"source": "/tmp/rw/new.txt", "destination": "/tmp/rw/moved.txt"})):
    try:
        fs.call(name, **args)
        print(name + ": allowed")
    except mcp_servers.Refused as e:
        print(name + ": Refused:", e)
print("after:", text(fs.read_text_file(path="/tmp/rw/new.txt")))
try:
    fs.read_text_file(path="/etc/passwd")
    print("outside: read")
except mcp_servers.ToolError:
    print("outside: ToolError")') || fail "the filesystem run: $out $(call_err | head -5)"
jcheck "$out" 'r["exit_code"] == 0' "the filesystem run failed"
jcheck "$out" 'all(w in r["stdout"] for w in ("read: made by the test\n", "list: True\n", "written: written by the run\n",
    "mkdir: True\n", "edit_file: Refused: fs.edit_file: this tool is destructive and the operator has not confirmed it",
    "move_file: Refused: fs.move_file: this tool is destructive", "after: written by the run\n", "outside: ToolError\n"))' \
    "the filesystem run: reads, the confirmed write or the refusals went wrong"
jcheck "$out" 'r["tool_calls"]["fs"]["refused"] == 2 and r["tool_calls"]["fs"]["calls"] == 10' \
    "the filesystem run's tool_calls"
log "filesystem: $(jget "$out" 'r["stdout"].strip()' | tr '\n' '|') tool_calls $(jget "$out" 'r["tool_calls"]')"

# --- the user confirms instead of the operator (elicitation, form mode): an MCP client (the v1
# SDK's, tests/node-clients/confirm.mjs) that declared elicitation is asked about fs's edit_file
# (destructive, not in CONFIRMED) by elicitation/create, naming the server and the tool and not
# the arguments; its accept lets the edit through, its decline refuses it and nothing changes;
# a client without the capability gets the refusal as before, saying why. Over Streamable HTTP
# (the question on the tools/call's event stream, the answer a POST of its own) and stdio.
CONFIRM_CODE='import mcp_servers
from mcp_servers import fs
def text(x):
    return x if isinstance(x, str) else x.get("content")
P = "/tmp/rw/confirm-@NAME@.txt"
fs.write_file(path=P, content="before @NAME@")
try:
    fs.edit_file(path=P, edits=[{"oldText": "before", "newText": "EDITED-SECRET-ARG"}])
    print("edit: done")
except mcp_servers.Refused as e:
    print("edit: Refused:", e)
print("now:", text(fs.read_text_file(path=P)))'
# confirm_run TRANSPORT ANSWER NAME: the exec of CONFIRM_CODE through confirm.mjs.
confirm_run() {
    local f
    f=$(sed "s/@NAME@/$3/g" <<<"$CONFIRM_CODE" | put "confirm.$3.py")
    cnode confirm.mjs "$1" "$2" "$f" ${4-} 2>"$HDIR/confirm.err"
}
restart_http
cursor=$(journal_cursor)
for transport in "http:$URL/mcp" stdio; do
    t=${transport%%:*}
    out=$(confirm_run "$transport" accept "$t-yes") || fail "$t: the accepting client's call: $out $(cat "$HDIR/confirm.err")"
    jcheck "$out" 'r["result"]["stdout"] == "edit: done\nnow: EDITED-SECRET-ARG '"$t"'-yes\n"' \
        "$t: the user's accept did not let edit_file through"
    jcheck "$out" '(len(r["asked"]) == 1 and "\"edit_file\"" in r["asked"][0]["message"] and
                    "\"fs\"" in r["asked"][0]["message"] and "SECRET" not in json.dumps(r["asked"]) and
                    r["asked"][0]["requestedSchema"]["properties"]["confirm"]["type"] == "boolean")' \
        "$t: the question does not name the server and tool alone, or has no boolean to confirm"
    out=$(confirm_run "$transport" decline "$t-no") || fail "$t: the declining client's call: $out $(cat "$HDIR/confirm.err")"
    jcheck "$out" '(len(r["asked"]) == 1 and "edit: Refused: fs.edit_file: this tool is destructive" in r["result"]["stdout"]
                    and "the user declined" in r["result"]["stdout"] and
                    r["result"]["stdout"].endswith("now: before '"$t"'-no\n"))' \
        "$t: the user's decline did not refuse edit_file, or the file changed"
    log "$t: accept and decline: $(jget "$out" 'r["result"]["stdout"].strip()' | tr '\n' '|')"
done
# A sandbox session's call asks its caller too (the session's tools connection outlives the call).
out=$(confirm_run "http:$URL/mcp" accept http-session session) ||
    fail "the accepting client's call in a session: $out $(cat "$HDIR/confirm.err")"
jcheck "$out" 'len(r["asked"]) == 1 and r["result"]["stdout"] == "edit: done\nnow: EDITED-SECRET-ARG http-session\n"' \
    "a session's call: the user's accept did not let edit_file through"
# An exec made a task (2025-11-25): the task says input_required while the question is open, the
# question comes on the client's tasks/result with the task's related-task _meta, and the accept
# lets the edit through; the task completes. Over HTTP and stdio.
for transport in "http:$URL/mcp" stdio; do
    t=${transport%%:*}
    out=$(confirm_run "$transport" accept "$t-task" task) ||
        fail "$t: the accepting client's task: $out $(cat "$HDIR/confirm.err")"
    jcheck "$out" '(r["result"]["stdout"] == "edit: done\nnow: EDITED-SECRET-ARG '"$t"'-task\n" and
                    "input_required" in r["statuses"] and len(r["asked"]) == 1 and
                    r["asked"][0]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"])' \
        "$t: a task's question was not asked on its tasks/result, or the accept did not let edit_file through"
    log "$t: a task's confirmation: statuses $(jget "$out" '",".join(r["statuses"])')"
done
# 2026-07-28's tasks extension: tasks/get says input_required with the question in inputRequests,
# tasks/update's inputResponses answer it. Raw HTTP requests, and @modelcontextprotocol/client with
# ext-tasks (its onInputRequest answers); a decline refuses the edit and leaves the file.
for mode in ext-raw ext-tasks; do
    out=$(confirm_run "http:$URL/mcp" accept "$mode" "$mode") ||
        fail "$mode: the accepting client's task: $out $(cat "$HDIR/confirm.err")"
    jcheck "$out" '(r["result"]["stdout"] == "edit: done\nnow: EDITED-SECRET-ARG '"$mode"'\n" and
                    len(r["asked"]) == 1 and r["asked"][0].get("method", "elicitation/create") == "elicitation/create" and
                    r["asked"][0].get("kind", "elicitation") == "elicitation" and
                    r["asked"][0]["mode"] == "form" and "\"edit_file\"" in r["asked"][0]["message"] and
                    ("'"$mode"'" != "ext-raw" or "input_required" in r["statuses"]))' \
        "$mode: a 2026-07-28 task's question was not in inputRequests, or its answer did not let edit_file through"
    log "$mode: a 2026-07-28 task's confirmation: statuses $(jget "$out" '",".join(r["statuses"])')"
done
# A plain 2026-07-28 call (no task) of a client that declared elicitation: InputRequiredResult with
# the question and a requestState, and the retry with the inputResponses gets the result (multi
# round-trip requests). Raw HTTP requests, and @modelcontextprotocol/client's own MRTR driver.
for mode in mrtr-raw mrtr-v2; do
    out=$(confirm_run "http:$URL/mcp" accept "$mode" "$mode") ||
        fail "$mode: the accepting client's call: $out $(cat "$HDIR/confirm.err")"
    jcheck "$out" '(r["result"]["stdout"] == "edit: done\nnow: EDITED-SECRET-ARG '"$mode"'\n" and
                    len(r["asked"]) == 1 and r["asked"][0]["mode"] == "form" and
                    "\"edit_file\"" in r["asked"][0]["message"] and
                    ("'"$mode"'" != "mrtr-raw" or r["statuses"] == ["input_required", "complete"]))' \
        "$mode: no InputRequiredResult for a plain 2026-07-28 call, or its answer did not let edit_file through"
    log "$mode: a plain 2026-07-28 call's confirmation: $(jget "$out" '",".join(r["statuses"])')"
done
out=$(confirm_run "http:$URL/mcp" decline ext-raw-no ext-raw) ||
    fail "ext-raw: the declining client's task: $out $(cat "$HDIR/confirm.err")"
jcheck "$out" '("the user declined" in r["result"]["stdout"] and
                r["result"]["stdout"].endswith("now: before ext-raw-no\n"))' \
    "ext-raw: the user's decline did not refuse edit_file, or the file changed"
out=$(confirm_run "http:$URL/mcp" none http-none) || fail "the client without elicitation: $out $(cat "$HDIR/confirm.err")"
jcheck "$out" '(r["asked"] == [] and "did not declare the elicitation capability" in r["result"]["stdout"] and
                r["result"]["stdout"].endswith("now: before http-none\n"))' \
    "a client without elicitation: edit_file was not refused as before, or not clearly"
# The CLI's run (no MCP client): refused, nobody asked.
out=$(call --timeout 60 -- "$(sed 's/@NAME@/cli/g' <<<"$CONFIRM_CODE")") || fail "the CLI's run: $out $(call_err | head -5)"
jcheck "$out" '"nobody can be asked for this run" in r["stdout"] and r["stdout"].endswith("now: before cli\n")' \
    "a run without an MCP client: edit_file was not refused clearly"
journal=$(journal_since "$cursor" -o json)
grep -q '"TOOLS_CONFIRMED":"user"' <<<"$journal" || fail "the journal does not say the user confirmed the edit"
grep -q '"TOOLS_CONFIRMED":"refused"' <<<"$journal" || fail "the journal does not say an edit was refused unconfirmed"
! grep -q 'EDITED-SECRET-ARG' <<<"$journal" || fail "an argument of the confirmed call reached the journal"

# --- a run's caps and its end: answers past MAX_BYTES (8M by default) are LimitReached; three
# calls of 120 s and then three echoes (MAX_CONCURRENT=4: the echoes share the fourth slot) are in
# flight at once, the echoes answered while the long calls still run, which calls made one after
# another could not do; then the code exits with the long calls in flight, and the gateway cancels
# them at once (journaled "cancelled"), not at CALL_TIMEOUT_S (30 s, "timeout").
cursor=$(journal_cursor)
out=$(call --timeout 60 -- 'import asyncio, os, mcp_servers
from mcp_servers import everything
big, n = "x" * 900000, 0
try:
    for _ in range(20):
        everything.echo(message=big)
        n += 1
except mcp_servers.LimitReached:
    print("bytes: LimitReached after", n)
async def main():
    slow = [asyncio.ensure_future(everything.acall("trigger-long-running-operation", duration=120, steps=1))
            for _ in range(3)]
    echoes = await asyncio.gather(*[everything.echo_async(message="c%d" % i) for i in range(3)])
    print("echoes:", ",".join(echoes), "slow calls done:", [t.done() for t in slow], flush=True)
    os._exit(0)
asyncio.run(main())') || fail "the caps run: $out $(call_err | head -5)"
jcheck "$out" 'r["exit_code"] == 0 and "bytes: LimitReached after 9\n" in r["stdout"]' \
    "the caps run: answers did not stop at MAX_BYTES (9 of 900 kB fit in 8 MiB)"
jcheck "$out" '"echoes: Echo: c0,Echo: c1,Echo: c2 slow calls done: [False, False, False]\n" in r["stdout"]' \
    "the caps run: the calls did not run at once"
# Not journalctl's matches: 252 with a match skips the first entry after the cursor.
cancelled() { journal_since "$cursor" -o cat | grep -c 'tools call everything.trigger-long-running-operation: cancelled'; }
three_cancelled() { (($(cancelled) >= 3)); }
wait_for 20 three_cancelled ||
    fail "the run's calls in flight were not cancelled at its end: $(cancelled) of 3"$'\n'"$(
        journal_since "$cursor" -o cat | grep -F 'tools call' | tail -n 20)"
log "caps: $(jget "$out" 'r["stdout"].strip()' | tr '\n' '|') tool_calls $(jget "$out" 'r["tool_calls"]')"
# --- a Streamable HTTP server (URL=) through its bridge unit; its credential as a header.
if ((have_http)); then
    out=$(call --timeout 60 -- 'import mcp_servers
from mcp_servers import web
print("echo:", web.echo(message="over http"))
print("sum:", web.get_sum(a=40, b=2))
try:
    mcp_servers.call("webnokey", "echo", message="x")
    print("nokey: answered")
except mcp_servers.ToolCallError as e:
    print("nokey:", type(e).__name__, e)') || fail "the HTTP run: $out $(call_err | head -5)"
    jcheck "$out" 'r["exit_code"] == 0' "the HTTP run failed"
    jcheck "$out" '"echo: Echo: over http" in r["stdout"]' "web.echo did not come back over Streamable HTTP"
    jcheck "$out" '"42" in r["stdout"].split("sum:")[1]' "web.get_sum did not come back"
    jcheck "$out" '"nokey: UpstreamError" in r["stdout"]' "the URL server without the credential header was not refused"
    jcheck "$out" 'r["tool_calls"]["web"]["calls"] == 2 and r["tool_calls"]["web"]["errors"] == 0' \
        "tool_calls does not count the HTTP server's calls"
    [[ $out != *"$HTTP_CANARY"* ]] || fail "the header credential reached the run: $out"
    log "over Streamable HTTP: $(jget "$out" 'r["stdout"].strip().replace(chr(10), "; ")')"
    plog=$(bx journalctl -u mcp-test-http-proxy.service -o cat --no-pager)
    grep -q '^POST /mcp key=right$' <<<"$plog" && grep -q '^POST /mcp key=wrong$' <<<"$plog" ||
        fail "the proxy did not see the right key from web and a wrong one from webnokey:"$'\n'"$plog"
    [[ $(bx systemctl show -P PrivateNetwork mcp-exec-tools.service) == yes ]] ||
        fail "the gateway has the network"
    bx grep -qx 'IPAddressAllow=127.0.0.1' /run/systemd/generator/mcp-exec-upstream-web@.service ||
        fail "the bridge's unit is not confined to the URL's address"
    bx grep -rlF "$HTTP_CANARY" /run/systemd/generator /run/systemd/transient /etc/systemd 2>/dev/null &&
        fail "the header credential is in a unit file"
    # grep -c, not -q: the whole output read, so no SIGPIPE hides a match.
    n=$(bx systemctl show 'mcp-exec-upstream-web@*' 'mcp-exec-upstream-webnokey@*' mcp-exec-tools.service |
        grep -cF "$HTTP_CANARY")
    ((n == 0)) || fail "the header credential is in a unit's properties"
    bx journalctl --flush >/dev/null 2>&1
    n=$(journal_since "" -b -o verbose | grep -cF "$HTTP_CANARY")
    ((n == 0)) || fail "the header credential is in the journal"
    log "the header credential is in no run output, unit, unit property or journal entry"
fi

# --- over stdio (uid:0), one MCP session: the exec tool's description names everything in the
# operator's words and not memory; a sandbox session keeps its tools connection across calls.
cat >"$HDIR/calls.json" <<'EOF2'
[{"tool": "@list"},
 {"tool": "session_create", "args": {}},
 {"tool": "exec", "args": {"session": "@SESSION@", "code": "from mcp_servers import everything\nprint('one', everything.echo(message='s1'))"}},
 {"tool": "exec", "args": {"session": "@SESSION@", "code": "print('two', [everything.echo(message='s2') for _ in range(3)])"}},
 {"tool": "session_close", "args": {"session": "@SESSION@"}},
 {"tool": "exec", "task": true, "args": {"code": "from mcp_servers import everything\nprint('task', [everything.echo(message='t%d' % i) for i in range(2)])"}}]
EOF2
out=$(bx timeout 120 "$PY" "$ITEST_DIR/lib/packages-mcp.py" stdio "$BDIR/calls.json" 2>"$HDIR/stdio.err") ||
    fail "the stdio client failed: $out $(cat "$HDIR/stdio.err")"
desc=$(jget "$(sed -n 1p <<<"$out")" '[t for t in r["result"]["tools"] if t["name"] == "exec"][0]["description"]')
grep -qF -- "  - everything: The MCP reference server (echo, get-sum)" <<<"$desc" ||
    fail "the exec tool does not name the server: $desc"
grep -qF "import mcp_servers" <<<"$desc" || fail "the exec tool does not say how code calls tools"
! grep -qF -- "  - memory" <<<"$desc" || fail "the exec tool names a server this caller may not use"
log "described: $(grep -F -- '  - ' <<<"$desc" | tr '\n' ' ')"
for i in 3 4; do
    line=$(sed -n "${i}p" <<<"$out")
    text=$(jget "$line" 'r["result"]["structuredContent"]["stdout"]') || fail "session call $((i - 2)): $line"
    [[ $text == *"s$((i - 2))"* ]] || fail "session call $((i - 2)) did not reach the server: $line"
    # Each call's result counts its own calls: 1, then 3 (not 4: the session's so far).
    jcheck "$line" 'r["result"]["structuredContent"]["tool_calls"]["everything"]["calls"] == '"$(((i - 2) * 2 - 1))" \
        "session call $((i - 2)): tool_calls does not count its own calls"
    log "session call $((i - 2)): tool_calls $(jget "$line" 'r["result"]["structuredContent"]["tool_calls"]')"
done
log "a session's two calls reached the server: $(jget "$(sed -n 4p <<<"$out")" 'r["result"]["structuredContent"]["stdout"].strip()')"
# An exec made a task (2025-11-25, fetched with tasks/result): its code calls tools as a run does.
line=$(sed -n 6p <<<"$out")
jcheck "$line" 'r["task"] == "working" and "Echo: t1" in r["result"]["structuredContent"]["stdout"]' \
    "an exec in a task did not reach the server"
jcheck "$line" 'r["result"]["structuredContent"]["tool_calls"]["everything"]["calls"] == 2' \
    "an exec in a task: tool_calls does not count its calls"
log "an exec in a task: $(jget "$line" 'r["result"]["structuredContent"]["stdout"].strip()')"

# --- /metrics over HTTP: the broker's totals of the runs' and sessions' tool calls (at least the
# session's 4: a broker that exited idle in between starts its counts again).
restart_http
metrics=$(bx curl -s --max-time 10 "$URL/metrics") || fail "no /metrics"
ok=$(sed -n 's/^mcp_exec_tool_calls_total{server="everything",outcome="ok"} \([0-9]*\)$/\1/p' <<<"$metrics")
[[ -n $ok && $ok -ge 4 ]] ||
    fail "/metrics does not count the tool calls:"$'\n'"$(grep mcp_exec_tool <<<"$metrics")"
grep -q '^mcp_exec_tool_call_seconds_total{server="everything"} [0-9.]*$' <<<"$metrics" ||
    fail "/metrics does not count the tool calls' time:"$'\n'"$(grep mcp_exec_tool <<<"$metrics")"
! grep -q 'server="memory"' <<<"$metrics" || fail "/metrics counts a server nobody called"
log "/metrics: $(grep '^mcp_exec_tool' <<<"$metrics" | tr '\n' ' ')"

# --- the attack cases (tests/attacks/tools-*.py) against this servers.d, over stdio and HTTP.
# gateway_pid, gateway_rss: the gateway's main process and its VmRSS in kB (from /proc in the box).
gateway_pid() { bx systemctl show -P MainPID mcp-exec-tools.service; }
gateway_rss() { bx awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
wait_for 15 no_session_units || fail "the session is left after session_close: $(session_units --all)"
# The cases' harness wants no files of dynamic users left in the box: graph's and fs's instances
# keep state in their own /tmp, which goes with them; the gateway started again forgets both.
bx rm -f "$SD/graph.conf" "$SD/fs.conf"
bx systemctl stop mcp-exec-tools.service "mcp-exec-upstream-graph@*.service" "mcp-exec-upstream-fs@*.service"
out=$(call --timeout 60 -- 'from mcp_servers import everything
print(everything.echo(message="before the attacks"))') || fail "a run before the attack cases: $out $(call_err | head -5)"
jcheck "$out" 'r["exit_code"] == 0 and "Echo: before the attacks" in r["stdout"]' "a run before the attack cases"
g_pid=$(gateway_pid)
[[ $g_pid =~ ^[1-9][0-9]*$ ]] || fail "the gateway is not running before the attack cases (MainPID '$g_pid')"
g_rss0=$(gateway_rss "$g_pid")
attack_cases_copy "tools-*.py cases" "$ITEST_DIR"/attacks/tools-*.py
log "$N_CASES cases, over stdio and HTTP; the gateway (pid $g_pid) at $g_rss0 kB"
attack_cases_run tools 150
[[ $(gateway_pid) == "$g_pid" ]] || fail "the gateway did not survive the attack cases (pid $g_pid, now $(gateway_pid))"
g_rss1=$(gateway_rss "$g_pid")
# The bound: what one run can make the gateway hold is its input buffer (a frame of 1 MiB and a
# read of 64 KiB), its answers owed past which it stops reading (1 MiB and what was read), 256
# queued calls and a few in flight of small arguments: a few MiB. 16 MiB leaves room for malloc's
# arenas (2.3 MB seen); a 2 GiB frame taken at its word would pass it. The ASan pass's gateway
# keeps up to 32 MiB of freed memory in its quarantine (tests/lib/post-checks.sh), redzones
# around every block and size-class regions it does not give back (61 MB seen): 112 MiB more.
g_bound=$((16 * 1024))
bx grep -q libasan "/proc/$g_pid/maps" && g_bound=$((g_bound + 112 * 1024))
((g_rss1 - g_rss0 < g_bound)) ||
    fail "the gateway's RSS grew from $g_rss0 to $g_rss1 kB during the attack cases (bound: $g_bound kB more)"
log "the gateway (pid $g_pid) survived the cases: RSS $g_rss0 -> $g_rss1 kB"
# tools-end-1-detach: its grandchild's calls reached the gateway while the run lived (its run id
# from those), none of that run after END (the second of slack: the case prints END, then exits).
bx journalctl --flush >/dev/null 2>&1
bx journalctl -u mcp-exec-tools.service -o json --no-pager TOOLS_TOOL=after-end-probe >"$HDIR/probes.json"
for transport in stdio http; do
    seen=$("$PY" -c '
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
head = [r for r in rows if r.get("case") == "tools-end-1-detach"][0]["stdout_head"] or ""
end = float(re.search(r"^END (\d+\.\d+)$", head, re.M).group(1))
t = [(int(e["__REALTIME_TIMESTAMP"]) / 1e6, e.get("MCP_RUN")) for e in map(json.loads, open(sys.argv[2])) if e]
runs = {r for x, r in t if end - 10 < x <= end}
print(len([x for x, r in t if r in runs and x <= end]), len([x for x, r in t if r in runs and x > end + 1.0]))
' "$HDIR/results-$transport.jsonl" "$HDIR/probes.json") || fail "$transport: no END time from tools-end-1-detach"
    read -r before after <<<"$seen"
    ((before > 0)) || fail "$transport: tools-end-1-detach's grandchild never reached the gateway (control)"
    ((after == 0)) || fail "$transport: $after calls of tools-end-1-detach's grandchild after the run's end"
    log "$transport: tools-end-1-detach's grandchild: $before calls while the run lived, none after its end"
done
out=$(call --timeout 60 -- 'from mcp_servers import everything
print(everything.echo(message="after the attacks"))') || fail "a run after the attack cases: $out $(call_err | head -5)"
jcheck "$out" 'r["exit_code"] == 0 and "Echo: after the attacks" in r["stdout"]' "a run's calls fail after the attack cases"

# --- servers.d empty again: no tools; the code hears so clearly.
bx rm -f "$SD/everything.conf" "$SD/memory.conf" "$SD/graph.conf" "$SD/fs.conf" "$SD/web.conf" "$SD/webnokey.conf"
out=$(call --timeout 60 -- 'import mcp_servers
try:
    mcp_servers.call("everything", "echo", message="x")
except mcp_servers.ToolCallError as e:
    print(type(e).__name__, e)
print(mcp_servers.servers())') || fail "run without servers: $out $(call_err | head -5)"
jcheck "$out" 'r["exit_code"] == 0 and "[]" in r["stdout"] and "ToolsUnavailable" in r["stdout"]' \
    "a run without servers.d does not say it has no tools"
jcheck "$out" '"tool_calls" not in r' "a run without tools has tool_calls"
log "without servers: $(jget "$out" 'r["stdout"].strip()')"
