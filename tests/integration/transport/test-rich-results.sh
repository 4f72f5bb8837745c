#!/usr/bin/env bash
# Figures and files (issue 13) through real MCP clients against the real units, with matplotlib
# in the sandbox (Debian's /usr/bin/python3, tests/lib/rich.sh):
#   clients    tests/node-clients/rich.mjs with the v1 SDK over stdio, Streamable HTTP and SSE (it
#              validates structuredContent against the outputSchema), the v2 client over stdio
#              (2026-07-28 and legacy) and Streamable HTTP: a plot comes back as valid PNG image
#              blocks, a CSV under /tmp/outputs as a text resource, a binary file as a blob, input
#              files (text and base64) round-trip byte-exact, odd names make valid file: URIs, bad
#              input files are isError
#   inspector  the MCP Inspector CLI over stdio, http and sse: a plot with an input file comes
#              back as a PNG image block and the file as a resource; tools/list passes --strict
#   run        mcp-exec run --file --output-dir: the figure and the files land in the directory
# It logs the sizes of what came back ("RICH sizes").
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/rich.sh"

URL=http://127.0.0.1:8080
TOKEN=tok-$RANDOM$RANDOM$RANDOM$RANDOM

. "$ITEST_DIR/lib/http.sh"
set_http_token "$TOKEN"
rich_setup
restart_http

failed=()

# --- clients -------------------------------------------------------------------------------------
for part in v1-stdio v1-http v1-sse v2-stdio v2-http; do
    log "== $part"
    cnode rich.mjs "$part" "$URL" "$TOKEN" || failed+=("$part")
done
assert_clean 15

# --- inspector -----------------------------------------------------------------------------------
log "== inspector"
args=$("$PY" -c '
import json
print(json.dumps({"code": "import matplotlib.pyplot as plt, os, shutil\nplt.plot([3, 1, 2])\n"
                          "os.makedirs(\"/tmp/outputs\")\nshutil.copy(\"in.csv\", \"/tmp/outputs/back.csv\")\n",
                  "files": [{"name": "in.csv", "content": "x,y\n1,2\n"}]}))')
# check_inspector NAME OUTPUT: one PNG image block and the CSV back as a text resource.
check_inspector() {
    "$PY" -c '
import base64, json, sys
out = sys.stdin.read()
r = json.loads(out[out.index("{"):])
r = r.get("result", r)          # the CLI wraps the CallToolResult
imgs = [c for c in r["content"] if c["type"] == "image"]
res = [c["resource"] for c in r["content"] if c["type"] == "resource"]
png = base64.b64decode(imgs[0]["data"], validate=True) if len(imgs) == 1 else b""
ok = (r.get("isError") is not True and png[:8] == b"\x89PNG\r\n\x1a\n" and imgs[0]["mimeType"] == "image/png"
      and len(res) == 1 and res[0]["uri"] == "file:///tmp/outputs/back.csv" and res[0]["text"] == "x,y\n1,2\n")
if not ok:
    print(out[:1500])
sys.exit(0 if ok else 1)' <<<"$2" || { log "FAIL inspector $1"; failed+=("inspector-$1"); return; }
    log "ok inspector $1"
}
out=$(inspector --method tools/call --tool-name exec --tool-args-json "$args" --format json -q -- mcp-exec stdio 2>&1)
check_inspector stdio "$out"
out=$(inspector "$URL/mcp" --transport http --header "X-MCP-AUTH: $TOKEN" --method tools/call --tool-name exec \
    --tool-args-json "$args" --format json 2>&1)
check_inspector http "$out"
out=$(inspector --transport sse --server-url "$URL/sse" --header "X-MCP-AUTH: $TOKEN" --method tools/call \
    --tool-name exec --tool-args-json "$args" --format json 2>&1)
check_inspector sse "$out"
# The schemas with files, images and files lint clean.
if out=$(inspector --method tools/list --strict -q -- mcp-exec stdio 2>&1); then
    log "ok inspector tools/list --strict"
else
    log "FAIL inspector tools/list --strict: $(head -c 1500 <<<"$out")"
    failed+=(inspector-strict)
fi
assert_clean 15

# --- mcp-exec run --file --output-dir -------------------------------------------------------------
log "== mcp-exec run"
printf 'a,b\n1,2\n' >"$HDIR/data.csv"
head -c 2000 /dev/urandom >"$HDIR/blob.bin"
mkdir -p "$HDIR/out"
cat >"$HDIR/plot.py" <<'EOF'
import hashlib, os, shutil
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
plt.show()
os.makedirs("/tmp/outputs/copies")
for n in ("data.csv", "blob.bin"):
    shutil.copy(n, "/tmp/outputs/copies/" + n)
print("ok")
EOF
chmod 0644 "$HDIR"/{data.csv,blob.bin,plot.py}
out=$(bx mcp-exec run --file "$BDIR/data.csv" --file "$BDIR/blob.bin" --output-dir "$BDIR/out" "$BDIR/plot.py" </dev/null 2>&1)
rc=$?
if ((rc != 0)) || [[ $out != ok* ]] || ! cmp -s "$HDIR/data.csv" "$HDIR/out/copies/data.csv" ||
    ! cmp -s "$HDIR/blob.bin" "$HDIR/out/copies/blob.bin" ||
    [[ $(head -c 8 "$HDIR/out/figure-1.png" | od -An -tx1 | tr -d ' \n') != 89504e470d0a1a0a ]]; then
    log "FAIL mcp-exec run (exit $rc): $out"$'\n'"$(find "$HDIR/out" -ls)"
    failed+=(run)
else
    log "ok mcp-exec run: $(cd "$HDIR/out" && find . -type f | sort | tr '\n' ' ')"
fi
assert_clean 15

((${#failed[@]} == 0)) || fail "failed parts: ${failed[*]}"
pass
