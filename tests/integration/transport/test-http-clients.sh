#!/usr/bin/env bash
# Real MCP clients over HTTP against the real units (mcp-exec.socket on 127.0.0.1:8080 in the box),
# with the token from the systemd credential and sent as X-MCP-AUTH:
#   v1      the TypeScript SDK v1 Client over StreamableHTTPClientTransport and SSEClientTransport:
#           version, tools/list, a call with structuredContent, progress, parallel calls, a
#           cancellation by AbortSignal (no run unit left after), DELETE of the session; and a
#           401 without the token
#   v2      the v2 client: versionNegotiation auto lands on the stateless 2026-07-28 (no session),
#           the default on 2025-11-25 with a session
#   inspector  the MCP Inspector CLI with --transport http and sse, and exit 3 without the token
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

URL=http://127.0.0.1:8080
TOKEN=tok-$RANDOM$RANDOM$RANDOM$RANDOM

. "$ITEST_DIR/lib/http.sh"
set_http_token "$TOKEN"
restart_http

SDK=$CLIENTS/node_modules/@modelcontextprotocol/sdk/dist/esm/client
V2=$CLIENTS/node_modules/@modelcontextprotocol/client/dist/index.mjs

cat >"$HDIR/clients.mjs" <<'EOF'
// Each step prints "ok NAME" or "FAIL NAME: why" to stderr; exit 1 if any failed.
const [, , part, base, token, sdk, v2] = process.argv;
const headers = { 'X-MCP-AUTH': token };
let failed = 0;
const log = (...a) => process.stderr.write(a.join(' ') + '\n');
function check(cond, what, detail) {
    if (!cond) throw new Error(what + (detail === undefined ? '' : ': ' + JSON.stringify(detail).slice(0, 800)));
}
async function step(name, fn) {
    try {
        await fn();
        log('ok', name);
    } catch (e) {
        failed++;
        log('FAIL', name + ':', (e && e.stack) || e);
    }
}
const sleep = ms => new Promise(r => setTimeout(r, ms));

async function exercise(client, kind) {
    const tools = await client.listTools();
    check(tools.tools.map((t) => t.name).join() === 'exec,session_create,session_close', `${kind}: tools/list`, tools);
    const r = await client.callTool({ name: 'exec', arguments: { code: 'print(6*7)' } });
    check(!r.isError && r.structuredContent && r.structuredContent.stdout === '42\n', `${kind}: call`, r);
    let progress = 0;
    const r2 = await client.callTool({ name: 'exec', arguments: { code: 'import time; time.sleep(2.5); print("slept")' } },
                                     undefined, { onprogress: () => progress++ });
    check(r2.structuredContent.stdout === 'slept\n', `${kind}: slow call`, r2);
    check(progress >= 1, `${kind}: no progress during a 2.5 s call`);
    const rs = await Promise.all([1, 2, 3].map(i => client.callTool({ name: 'exec', arguments: { code: `print(${i})` } })));
    check(rs.map(x => x.structuredContent.stdout).join('') === '1\n2\n3\n', `${kind}: parallel calls`, rs);
    const ac = new AbortController();
    const t0 = Date.now();
    const p = client.callTool({ name: 'exec', arguments: { code: 'import time; time.sleep(60)' } }, undefined, { signal: ac.signal });
    setTimeout(() => ac.abort(), 1500);
    let aborted = false;
    try { await p; } catch { aborted = true; }
    check(aborted && Date.now() - t0 < 10000, `${kind}: the aborted call did not end at once`);
    // The session is still usable after a cancellation.
    const r3 = await client.callTool({ name: 'exec', arguments: { code: 'print(6*7)' } });
    check(r3.structuredContent.stdout === '42\n', `${kind}: call after the cancellation`, r3);
}

if (part === 'v1') {
    const { Client } = await import(sdk + '/index.js');
    const { StreamableHTTPClientTransport } = await import(sdk + '/streamableHttp.js');
    const { SSEClientTransport } = await import(sdk + '/sse.js');

    await step('v1 streamable http', async () => {
        const client = new Client({ name: 'http-test-v1', version: '1.0.0' });
        const t = new StreamableHTTPClientTransport(new URL(base + '/mcp'), { requestInit: { headers } });
        await client.connect(t);
        check(t.protocolVersion === '2025-11-25', 'negotiated version', t.protocolVersion);
        check(/^[a-z0-9-]{1,32}\.[0-9a-f]{32}$/.test(t.sessionId || ''), 'session id', t.sessionId);
        await exercise(client, 'streamable');
        await t.terminateSession();
        await client.close();
    });
    await step('v1 sse', async () => {
        const client = new Client({ name: 'http-test-v1-sse', version: '1.0.0' });
        const t = new SSEClientTransport(new URL(base + '/sse'), { requestInit: { headers } });
        await client.connect(t);
        check(client.getServerVersion().name === 'mcp-exec', 'server info', client.getServerVersion());
        await exercise(client, 'sse');
        await client.close();
    });
    await step('v1 without token', async () => {
        for (const make of [() => new StreamableHTTPClientTransport(new URL(base + '/mcp')),
                            () => new SSEClientTransport(new URL(base + '/sse'))]) {
            const client = new Client({ name: 'http-test-v1-notoken', version: '1.0.0' });
            let err;
            try { await client.connect(make()); } catch (e) { err = e; }
            check(err && /401|nauthorized/.test(String(err.message || err)), 'connect without the token did not fail with 401', String(err));
            await client.close().catch(() => {});
        }
    });
} else if (part === 'v2') {
    const { Client, StreamableHTTPClientTransport } = await import(v2);
    await step('v2 auto negotiation', async () => {
        const client = new Client({ name: 'http-test-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
        const t = new StreamableHTTPClientTransport(new URL(base + '/mcp'), { requestInit: { headers } });
        await client.connect(t);
        const v = client.getNegotiatedProtocolVersion ? client.getNegotiatedProtocolVersion() : t.protocolVersion;
        check(v === '2026-07-28', 'auto negotiation did not land on 2026-07-28', v);
        check(!t.sessionId, 'a stateless exchange got a session', t.sessionId);
        const r = await client.callTool({ name: 'exec', arguments: { code: 'print(6*7)' } });
        check(r.structuredContent && r.structuredContent.stdout === '42\n', 'stateless call', r);
        let progress = 0;
        const r2 = await client.callTool({ name: 'exec', arguments: { code: 'import time; time.sleep(2); print(1)' } },
                                         { onprogress: () => progress++ });
        check(r2.structuredContent.stdout === '1\n' && progress >= 1, 'stateless progress', { progress, r2 });
        await client.close();
    });
    await step('v2 default', async () => {
        const client = new Client({ name: 'http-test-v2', version: '1.0.0' });
        const t = new StreamableHTTPClientTransport(new URL(base + '/mcp'), { requestInit: { headers } });
        await client.connect(t);
        check(t.sessionId, 'no session');
        const r = await client.callTool({ name: 'exec', arguments: { code: 'print(6*7)' } });
        check(r.structuredContent && r.structuredContent.stdout === '42\n', 'call', r);
        await t.terminateSession();
        await client.close();
    });
}
await sleep(10);
process.exit(failed ? 1 : 0);
EOF
chmod 0644 "$HDIR/clients.mjs"

failed=()
log "== v1"
bx env HOME="$BDIR/home" "$NODE" "$BDIR/clients.mjs" v1 "$URL" "$TOKEN" "$SDK" "$V2" || failed+=(v1)
# The aborted 60 s runs were stopped, not left to their timeout.
assert_clean 15
log "== v2"
bx env HOME="$BDIR/home" "$NODE" "$BDIR/clients.mjs" v2 "$URL" "$TOKEN" "$SDK" "$V2" || failed+=(v2)
assert_clean 15

log "== inspector"
for t in http sse; do
    if [[ $t == http ]]; then target=("$URL/mcp" --transport http); else target=(--transport sse --server-url "$URL/sse"); fi
    out=$(inspector "${target[@]}" --header "X-MCP-AUTH: $TOKEN" --method tools/call --tool-name exec \
        --tool-args-json '{"code":"print(6*7)"}' --format json 2>&1)
    if [[ $out != *'"stdout":"42\n"'* ]]; then
        log "FAIL inspector $t: $(head -c 1000 <<<"$out")"
        failed+=("inspector-$t")
    else
        log "ok inspector $t"
    fi
    inspector "${target[@]}" --method tools/list >/dev/null 2>&1
    rc=$?
    if ((rc != 3)); then
        log "FAIL inspector $t without the token: exit $rc, want 3 (auth required)"
        failed+=("inspector-$t-401")
    else
        log "ok inspector $t without the token: exit 3"
    fi
done

if journal_since "" -u mcp-exec.service | grep -qF "$TOKEN"; then
    fail "the token is in the journal"
fi
((${#failed[@]} == 0)) || fail "failed parts: ${failed[*]}"
pass
