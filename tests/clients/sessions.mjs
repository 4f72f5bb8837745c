// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/clients/sessions.mjs - stateful sessions (issue 14) through real MCP clients, in the box:
//
//   node sessions.mjs v1-stdio                 v1 SDK Client, StdioClientTransport (`mcp-exec stdio`)
//   node sessions.mjs v1-http URL TOKEN        v1 SDK Client, Streamable HTTP (a 2025 MCP session)
//   node sessions.mjs v1-sse URL TOKEN         v1 SDK Client, legacy HTTP+SSE
//   node sessions.mjs v2-stdio                 v2 client over stdio, the 2026-07-28 era
//   node sessions.mjs v2-http URL TOKEN        v2 client over Streamable HTTP, the 2026-07-28 era:
//                                              the handle travels as Mcp-Param-Session too, and
//                                              a call without (or with another) is -32020
// With each: tools/list offers session_create and session_close and exec's "session"; a session
// keeps x = 41 for print(x + 1), a file in /tmp, a pandas DataFrame; session_close ends it and
// the handle is "session not found" afterwards (exec and session_close). The v1 SDK validates
// structuredContent against each tool's outputSchema itself.
//
//   node sessions.mjs measure                  what a session costs, as JSON on stdout: MemoryCurrent
//                                              of its unit idle and with pandas imported, the
//                                              latency of session_create, of `pass` in a session
//                                              and of a stateless `pass`, back to back and with a
//                                              warm unit ready (medians, ms)
//
// Units are looked at with systemctl: the scripts run in the box as root (lib.sh's cnode).

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { MCP_EXEC, MODERN, STDIO_ARGS, Suite, check, execResult, log, toolErrorText } from './lib.mjs';

const [part, ...rest] = process.argv.slice(2);
const suite = new Suite(`sessions ${part}`);
const HANDLE_RE = /^[A-Za-z0-9_-]+\.[0-9a-f]{32}$/;
const GONE_RE = /^session not found/;

// ---- helpers ----------------------------------------------------------------------------------

function sh(cmd, args) {
    return new Promise((resolve) => {
        execFile(cmd, args, { timeout: 30000 }, (err, stdout, stderr) =>
            resolve({ code: err ? (err.code ?? 1) : 0, stdout: String(stdout), stderr: String(stderr) }));
    });
}

// The session units in the box, in any state.
export async function sessionUnits() {
    const r = await sh('systemctl', ['list-units', '--all', 'mcp-exec-session-*', '--plain', '--no-legend', '--no-pager']);
    return r.stdout.split('\n').map((l) => l.trim().split(/\s+/)[0]).filter((u) => u && u.startsWith('mcp-exec-session-'));
}

async function waitNoSessionUnits(what, ms = 15000) {
    const deadline = Date.now() + ms;
    let u;
    while ((u = await sessionUnits()).length) {
        check(Date.now() < deadline, `${what}: session units left after ${ms} ms`, u);
        await sleep(200);
    }
}

// The structured result of session_create, checked.
function created(res, what) {
    check(res?.isError !== true, `${what}: session_create failed`, res);
    const sc = res.structuredContent;
    check(sc && typeof sc === 'object', `${what}: no structuredContent`, res);
    const text = res.content?.find((c) => c.type === 'text')?.text;
    check(text && JSON.stringify(JSON.parse(text)) === JSON.stringify(sc), `${what}: text block and structuredContent differ`, res);
    check(HANDLE_RE.test(sc.session), `${what}: handle`, sc.session);
    for (const k of ['idle_timeout_s', 'max_lifetime_s', 'memory_max_bytes'])
        check(Number.isInteger(sc[k]) && sc[k] > 0, `${what}: ${k}`, sc);
    return sc;
}

function gone(res, what) {
    check(res?.isError === true && GONE_RE.test(toolErrorText(res)), `${what}: not "session not found"`, res);
    check(!res.structuredContent, `${what}: a gone session has a structured result`, res);
}

// A client of either SDK: callTool(name, args) -> CallToolResult.
function wrap(client, v2) {
    return {
        client,
        call: (name, args, opts) => (v2 ? client.callTool({ name, arguments: args }, opts) : client.callTool({ name, arguments: args }, undefined, opts)),
        exec: function (code, session, extra = {}) {
            return this.call('exec', { code, ...(session !== undefined ? { session } : {}), ...extra }, { timeout: 120000 });
        },
        create: function () {
            return this.call('session_create', {}, { timeout: 120000 });
        },
        close: function (session) {
            return this.call('session_close', { session });
        },
    };
}

async function v1Client(kind, base, token) {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const headers = token ? { 'X-MCP-AUTH': token } : {};
    let transport;
    if (kind === 'stdio') {
        const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
        transport = new StdioClientTransport({ command: MCP_EXEC, args: STDIO_ARGS, stderr: 'inherit' });
    } else if (kind === 'http') {
        const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
        transport = new StreamableHTTPClientTransport(new URL(base + '/mcp'), { requestInit: { headers } });
    } else {
        const { SSEClientTransport } = await import('@modelcontextprotocol/sdk/client/sse.js');
        transport = new SSEClientTransport(new URL(base + '/sse'), { requestInit: { headers } });
    }
    const client = new Client({ name: 'mcp-exec-sessions', version: '1.0.0' });
    await client.connect(transport);
    // The tool list is what the SDK validates structuredContent against.
    await client.listTools();
    const w = wrap(client, false);
    w.transport = transport;
    return w;
}

// The v2 client, auto negotiation: the 2026-07-28 era. Over HTTP every request is recorded
// (headers and body) so that the Mcp-Param-Session mirror can be checked and replayed.
async function v2Client(kind, base, token) {
    const { Client } = await import('@modelcontextprotocol/client');
    let transport;
    const sent = [];
    if (kind === 'stdio') {
        const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
        transport = new StdioClientTransport({ command: MCP_EXEC, args: STDIO_ARGS, stderr: 'inherit' });
    } else {
        const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
        const recFetch = (url, init = {}) => {
            sent.push({ url: String(url), method: init.method, headers: new Headers(init.headers), body: init.body });
            return fetch(url, init);
        };
        transport = new StreamableHTTPClientTransport(new URL(base + '/mcp'), {
            requestInit: { headers: { 'X-MCP-AUTH': token } },
            fetch: recFetch,
        });
    }
    const client = new Client({ name: 'mcp-exec-sessions', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(transport);
    check(client.getNegotiatedProtocolVersion() === MODERN, `v2 ${kind}: not the stateless revision`, client.getNegotiatedProtocolVersion());
    await client.listTools();
    const w = wrap(client, true);
    w.sent = sent;
    w.transport = transport;
    return w;
}

const closeQuietly = (c) => c?.client.close().catch(() => {});

// ---- the clients part -------------------------------------------------------------------------

async function exercise(c, kind, { stateless = false, afterCall } = {}) {
    await suite.step(`${kind}: tools/list offers the session tools`, async () => {
        const { tools } = await c.client.listTools();
        const by = Object.fromEntries(tools.map((t) => [t.name, t]));
        check(by.exec && by.session_create && by.session_close, `${kind}: tools`, tools.map((t) => t.name));
        const arg = by.exec.inputSchema?.properties?.session;
        check(arg?.type === 'string' && !(by.exec.inputSchema.required || []).includes('session'), `${kind}: exec's session`, by.exec.inputSchema);
        check(by.session_close.inputSchema?.required?.includes('session'), `${kind}: session_close's session`, by.session_close.inputSchema);
        // 2026-07-28: mirrored into Mcp-Param-Session; earlier revisions know no x-mcp-header.
        const want = stateless ? 'Session' : undefined;
        check(arg['x-mcp-header'] === want && by.session_close.inputSchema.properties.session['x-mcp-header'] === want,
            `${kind}: x-mcp-header`, { exec: arg, close: by.session_close.inputSchema.properties.session });
        check(by.session_create.outputSchema?.required?.includes('session'), `${kind}: session_create's outputSchema`, by.session_create);
        check(/session/.test(by.session_create.description) && /\d+ s without a call/.test(by.session_create.description),
            `${kind}: the description states the lifetime`, by.session_create.description);
    }, { fatal: true });

    let h;
    await suite.step(`${kind}: session_create`, async () => {
        h = created(await c.create(), kind).session;
    }, { fatal: true, timeoutMs: 120000 });

    await suite.step(`${kind}: x = 41, then print(x + 1)`, async () => {
        const a = execResult(await c.exec('x = 41', h), `${kind}: x = 41`);
        check(a.exit_code === 0 && a.stdout === '' && a.session_lost === false, `${kind}: x = 41`, a);
        afterCall?.('x = 41', h);
        const b = execResult(await c.exec('print(x + 1)', h), `${kind}: print(x + 1)`);
        check(b.stdout === '42\n' && b.exit_code === 0 && b.session_lost === false, `${kind}: print(x + 1)`, b);
        afterCall?.('print(x + 1)', h);
        // Without the handle, exec is stateless as before.
        const s = execResult(await c.exec("print('x' in globals())"), `${kind}: stateless`);
        check(s.stdout === 'False\n' && !('session_lost' in s && s.session_lost), `${kind}: a stateless exec sees the session`, s);
    });

    await suite.step(`${kind}: a file written in one call is read in the next`, async () => {
        const tag = randomBytes(8).toString('hex');
        const a = execResult(await c.exec(`open("/tmp/kept.txt", "w").write("${tag}")\nopen("rel.txt", "w").write("rel")`, h), `${kind}: write`);
        check(a.exit_code === 0, `${kind}: write`, a);
        const b = execResult(await c.exec('import os\nprint(open("/tmp/kept.txt").read(), open("rel.txt").read(), os.getcwd())', h), `${kind}: read`);
        check(b.stdout === `${tag} rel /tmp\n`, `${kind}: read back`, b);
    });

    await suite.step(`${kind}: a pandas DataFrame survives`, async () => {
        const a = execResult(await c.exec('import pandas as pd\ndf = pd.DataFrame({"city": ["a", "b", "c"], "n": [1, 2, 3]})', h), `${kind}: make`);
        check(a.exit_code === 0 && a.stderr === '', `${kind}: making the DataFrame`, a);
        const b = execResult(await c.exec('df["m"] = df["n"] * 2\nprint(type(df).__name__, int(df["m"].sum()), list(df.columns))', h), `${kind}: use`);
        check(b.stdout === "DataFrame 12 ['city', 'n', 'm']\n", `${kind}: the DataFrame`, b);
    }, { timeoutMs: 120000 });

    await suite.step(`${kind}: session_close, then the handle is gone`, async () => {
        const r = await c.close(h);
        check(r.isError !== true && r.structuredContent?.session === h && r.structuredContent?.closed === true, `${kind}: close`, r);
        gone(await c.exec('print(x)', h), `${kind}: exec after close`);
        gone(await c.close(h), `${kind}: close after close`);
    });
    return h;
}

async function clientsPart(kind, base, token) {
    if (kind === 'v1-stdio' || kind === 'v1-http' || kind === 'v1-sse') {
        const c = await v1Client(kind.slice(3), base, token);
        await exercise(c, kind);
        await closeQuietly(c);
        return;
    }
    if (kind === 'v2-stdio') {
        const c = await v2Client('stdio');
        await exercise(c, kind, { stateless: true });
        await closeQuietly(c);
        return;
    }
    // v2-http: each tools/call with a session must carry Mcp-Param-Session.
    const c = await v2Client('http', base, token);
    const mirrored = [];
    await exercise(c, kind, {
        stateless: true,
        afterCall: (what, h) => {
            const req = [...c.sent].reverse().find((r) => r.method === 'POST' && /"tools\/call"/.test(String(r.body)));
            check(req, `${kind}: ${what}: no tools/call recorded`);
            const body = JSON.parse(String(req.body));
            check(body.params?.arguments?.session === h, `${kind}: ${what}: the recorded call`, body);
            check(req.headers.get('mcp-param-session') === h, `${kind}: ${what}: Mcp-Param-Session`, [...req.headers]);
            mirrored.push(req);
        },
    });
    await suite.step(`${kind}: without Mcp-Param-Session, or with another, it is -32020`, async () => {
        check(mirrored.length > 0, `${kind}: nothing recorded`);
        const h = created(await c.create(), `${kind}: second`).session;
        const req = mirrored[0];
        const body = JSON.parse(String(req.body));
        body.params.arguments.session = h;
        for (const [what, value] of [['missing', null], ['another handle', h.replace(/.$/, (d) => (d === '0' ? '1' : '0'))]]) {
            const headers = new Headers(req.headers);
            if (value === null) headers.delete('mcp-param-session');
            else headers.set('mcp-param-session', value);
            body.id = 9000 + mirrored.length;
            const res = await fetch(req.url, { method: 'POST', headers, body: JSON.stringify(body) });
            const text = await res.text();
            let j = null;
            try {
                j = JSON.parse(text);
            } catch {}
            check(res.status === 400 && j?.error?.code === -32020 && !j.result, `${kind}: ${what}: want 400/-32020`, { status: res.status, text });
        }
        // The same request with the right header runs.
        const headers = new Headers(req.headers);
        headers.set('mcp-param-session', h);
        body.params.arguments.code = 'print("mirrored")';
        const res = await fetch(req.url, { method: 'POST', headers, body: JSON.stringify(body) });
        const text = await res.text();
        check(res.status === 200 && /mirrored\\n/.test(text), `${kind}: the same call with the header`, { status: res.status, text });
        check((await c.close(h)).isError !== true, `${kind}: close the second`);
    });
    await closeQuietly(c);
}

// ---- what a session costs ---------------------------------------------------------------------

async function measurePart() {
    const c = await v1Client('stdio');
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const timed = async (fn) => {
        const t = process.hrtime.bigint();
        const r = await fn();
        return [Number(process.hrtime.bigint() - t) / 1e6, r];
    };
    const memory = async () => {
        const u = await sessionUnits();
        check(u.length === 1, 'measure: one session unit', u);
        return Number((await sh('systemctl', ['show', '-P', 'MemoryCurrent', u[0]])).stdout.trim());
    };
    const out = {};
    await suite.step('measure', async () => {
        const creates = [];
        for (let i = 0; i < 5; i++) {
            const [ms, r] = await timed(() => c.create());
            creates.push(ms);
            check((await c.close(created(r, 'measure').session)).isError !== true, 'measure: close');
            await waitNoSessionUnits('measure');
        }
        out.session_create_ms = { median: median(creates), all: creates.map((x) => Math.round(x)) };
        const h = created(await c.create(), 'measure').session;
        await sleep(1000);
        out.idle_memory_bytes = await memory();
        const inSession = [], cold = [], warm = [];
        for (let i = 0; i < 21; i++) {
            const [a, ra] = await timed(() => c.exec('pass', h));
            check(execResult(ra, 'measure: pass in the session').exit_code === 0, 'measure: pass in the session');
            inSession.push(a);
        }
        // Stateless: back to back (the warm pool drains: mostly cold starts), and with the pool
        // full (a warm unit takes the call).
        const stateless = async (into) => {
            const [b, rb] = await timed(() => c.exec('pass'));
            check(execResult(rb, 'measure: stateless pass').exit_code === 0, 'measure: stateless pass');
            into.push(b);
        };
        for (let i = 0; i < 7; i++) await stateless(cold);
        for (let i = 0; i < 3; i++) {
            const deadline = Date.now() + 30000;
            while ((await sh('systemctl', ['list-units', 'mcp-exec-run-*', '--plain', '--no-legend'])).stdout.split('\n')
                .filter((l) => /warm unit \(idle\)/.test(l)).length < 1 && Date.now() < deadline)
                await sleep(200);
            await stateless(warm);
        }
        out.session_pass_ms = median(inSession);
        out.stateless_back_to_back_pass_ms = median(cold);
        out.stateless_warm_pass_ms = median(warm);
        const [imp, ri] = await timed(() => c.exec('import pandas as pd\ndf = pd.DataFrame({"a": range(1000)})', h));
        check(execResult(ri, 'measure: pandas').exit_code === 0, 'measure: import pandas');
        out.import_pandas_ms = Math.round(imp);
        await sleep(1000);
        out.pandas_memory_bytes = await memory();
        check((await c.close(h)).isError !== true, 'measure: close');
    }, { timeoutMs: 120000 });
    process.stdout.write(JSON.stringify(out) + '\n');
    await closeQuietly(c);
}

try {
    if (/^v[12]-(stdio|http|sse)$/.test(part ?? '')) await clientsPart(part, rest[0], rest[1]);
    else if (part === 'measure') await measurePart();
    else {
        log('usage: node sessions.mjs v1-stdio|v1-http|v1-sse|v2-stdio|v2-http|measure');
        process.exit(2);
    }
} catch (e) {
    await suite.step('connect', () => {
        throw e;
    });
}
suite.finish();
