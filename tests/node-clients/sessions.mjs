// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/sessions.mjs - stateful sessions (issue 14) through real MCP clients, in the box:
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
// The attack side (tests/integration/sessions/test-sessions-attacks.sh):
//   node sessions.mjs guess                    guessed and malformed handles over stdio, while a
//                                              session of the same caller lives
//   node sessions.mjs scopes URL TOKEN         another MCP session's handle (2025, SSE,
//                                              stateless) is "not found"; a stateless handle
//                                              serves every stateless request of the token;
//                                              DELETE and the end of an SSE stream close theirs
//   node sessions.mjs flood N URL TOKEN        N session_create calls, half over stdio (uid 0),
//                                              half stateless over HTTP (the token): the caps
//                                              hold; the handles go to $MCP_TEST_STATE/flood.json
//   node sessions.mjs close-flood URL TOKEN    closes the sessions flood.json lists, each by its caller
//   node sessions.mjs cases                    one session per case (memory to OOM, a fork bomb,
//                                              a thread printing forever, os.close(1), os._exit,
//                                              SIGINT ignored, a busy session, a forked child);
//                                              after each: no session unit, a stateless exec works
//   node sessions.mjs call stdio|http TOOL ARGS [URL TOKEN]
//                                              one tools/call (v1 SDK over stdio, or the v2 client
//                                              stateless over HTTP); prints the result as JSON
//
// Units are looked at with systemctl: the scripts run in the box as root (lib.sh's cnode).

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MCP_EXEC, MODERN, STATE, STDIO_ARGS, Suite, check, execResult, log, short, toolErrorText } from './lib.mjs';

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

// ---- attacks: guessed handles -----------------------------------------------------------------

async function guessPart() {
    const c = await v1Client('stdio');
    let h, node, id;
    await suite.step('a live session of this caller', async () => {
        h = created(await c.create(), 'guess').session;
        [node, id] = h.split('.');
        execResult(await c.exec('secret = "mine"', h), 'guess: secret');
    }, { fatal: true });
    const hex = () => randomBytes(16).toString('hex');
    const flip = id.replace(/^./, (d) => (d === 'f' ? 'e' : 'f'));
    const guesses = [
        ['random hex, our node', `${node}.${hex()}`],
        ['another node, random hex', `otherhost.${hex()}`],
        ['another node, the live id', `otherhost.${id}`],
        ['the live id, no node', id],
        ['the live id, upper case', `${node}.${id.toUpperCase()}`],
        ['one digit off', `${node}.${flip}`],
        ['31 digits', `${node}.${id.slice(1)}`],
        ['33 digits', `${node}.${id}0`],
        ['trailing space', `${h} `],
        ['trailing newline', `${h}\n`],
        ['NUL inside', `${node}.${id.slice(0, 16)}\u0000${id.slice(16)}`],
        ['empty', ''],
        ['garbage', 'garbage'],
        ['dots', '...'],
        ['path', '../../run/mcp-exec/broker.sock'],
        ['unit name', 'mcp-exec-session-' + id],
        ['very long', `${node}.${'a'.repeat(100000)}`],
        ['non-ASCII', `${node}.${'é'.repeat(32)}`],
    ];
    await suite.step('guessed and malformed handles are "session not found"', async () => {
        for (const [what, g] of guesses) {
            const r = await c.exec('print(secret)', g);
            gone(r, `exec: ${what}`);
            check(!/mine/.test(JSON.stringify(r)), `exec: ${what}: reached the live session`, r);
            gone(await c.close(g), `session_close: ${what}`);
        }
        // 200 random ones of our node: never another session.
        for (let i = 0; i < 200; i++) gone(await c.exec('print(secret)', `${node}.${hex()}`), `random guess ${i}`);
    }, { timeoutMs: 120000 });
    await suite.step('a handle that is not a string is an argument error', async () => {
        for (const v of [42, true, { id }, [h]]) {
            const r = await c.exec('print(secret)', v);
            check(r.isError === true && !/mine/.test(JSON.stringify(r)), `session ${JSON.stringify(v)}`, r);
        }
        const r = await c.call('session_create', { session: h });
        check(r.isError === true, 'session_create with an argument', r);
    });
    await suite.step('the live session is untouched by all that', async () => {
        const r = execResult(await c.exec('print(secret)', h), 'guess: after');
        check(r.stdout === 'mine\n', 'the live session', r);
        check((await c.close(h)).isError !== true, 'close');
    });
    await closeQuietly(c);
}

// ---- attacks: scopes over HTTP ----------------------------------------------------------------

async function scopesPart(base, token) {
    const a = await v1Client('http', base, token);
    const b = await v1Client('http', base, token);
    const sse = await v1Client('sse', base, token);
    const st1 = await v2Client('http', base, token);
    const st2 = await v2Client('http', base, token);
    let ha, hs;
    await suite.step('two 2025 MCP sessions have different ids', () => {
        check(a.transport.sessionId && b.transport.sessionId && a.transport.sessionId !== b.transport.sessionId,
            'session ids', [a.transport.sessionId, b.transport.sessionId]);
    }, { fatal: true });
    await suite.step("another MCP session's handle is not found", async () => {
        ha = created(await a.create(), 'A').session;
        execResult(await a.exec('x = "A"', ha), 'A: x');
        for (const [name, c] of [['B (2025)', b], ['SSE', sse], ['stateless', st1]]) {
            gone(await c.exec('print(x)', ha), `${name}: exec with A's handle`);
            gone(await c.close(ha), `${name}: session_close of A's handle`);
        }
        const r = execResult(await a.exec('print(x)', ha), 'A: after');
        check(r.stdout === 'A\n', "A's session after the others tried it", r);
    });
    await suite.step('a stateless handle serves the stateless requests of the token, only them', async () => {
        hs = created(await st1.create(), 'stateless').session;
        execResult(await st1.exec('y = "S"', hs), 'stateless: y');
        const r = execResult(await st2.exec('print(y)', hs), 'another stateless client');
        check(r.stdout === 'S\n', 'another stateless client of the token', r);
        for (const [name, c] of [['A (2025)', a], ['SSE', sse]]) gone(await c.exec('print(y)', hs), `${name}: exec with the stateless handle`);
    });
    await suite.step('DELETE of the MCP session closes its sandbox session', async () => {
        const before = await sessionUnits();
        check(before.length === 2, 'two session units (A and stateless)', before);
        await a.transport.terminateSession();
        await closeQuietly(a);
        const deadline = Date.now() + 15000;
        while ((await sessionUnits()).length !== 1) {
            check(Date.now() < deadline, 'the unit of A is left after DELETE', await sessionUnits());
            await sleep(200);
        }
        gone(await st1.exec('print(x)', ha), "A's handle after DELETE");
        check((await st2.close(hs)).isError !== true, 'close the stateless one');
        await waitNoSessionUnits('after closing the stateless session');
    });
    await suite.step('the end of an SSE stream closes its sandbox sessions', async () => {
        const h = created(await sse.create(), 'SSE').session;
        execResult(await sse.exec('z = 1', h), 'SSE: z');
        check((await sessionUnits()).length === 1, 'one session unit', await sessionUnits());
        await closeQuietly(sse);
        await waitNoSessionUnits('after the SSE stream closed');
        gone(await st1.exec('print(z)', h), "SSE's handle after its stream ended");
    });
    for (const c of [b, st1, st2]) await closeQuietly(c);
}

// ---- attacks: 1,000 session_create ------------------------------------------------------------

async function floodPart(n, base, token) {
    const stdio = await v1Client('stdio');
    const http = await v2Client('http', base, token);
    const out = { made: { stdio: [], http: [] }, refused: { stdio: 0, http: 0 }, texts: new Set(), other: [] };
    const one = async (kind, c) => {
        const r = await c.create();
        if (r.isError !== true) out.made[kind].push(created(r, `flood ${kind}`).session);
        else {
            const t = toolErrorText(r);
            if (/^no new session: /.test(t)) {
                out.refused[kind]++;
                out.texts.add(t);
            } else out.other.push(t);
        }
    };
    await suite.step(`${n} session_create calls, 8 at a time on each transport`, async () => {
        let next = 0;
        const worker = async (kind, c) => {
            while (next < n) {
                next++;
                await one(kind, c);
            }
        };
        await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].flatMap(() => [worker('stdio', stdio), worker('http', http)]));
        log(`sessions flood: made ${out.made.stdio.length} (stdio) + ${out.made.http.length} (http), refused ` +
            `${out.refused.stdio} + ${out.refused.http}, other ${out.other.length}`);
        for (const t of out.texts) log(`sessions flood: refusal: ${t}`);
        check(out.other.length === 0, 'errors other than the cap', out.other.slice(0, 5));
        check(out.made.stdio.length + out.made.http.length + out.refused.stdio + out.refused.http === n, 'every call answered');
    }, { timeoutMs: 240000 });
    writeFileSync(join(STATE, 'flood.json'), JSON.stringify({ made: out.made, refused: out.refused, texts: [...out.texts] }));
    await closeQuietly(stdio);
    await closeQuietly(http);
}

async function closeFloodPart(base, token) {
    const { made } = JSON.parse(readFileSync(join(STATE, 'flood.json'), 'utf8'));
    const stdio = await v1Client('stdio');
    const http = await v2Client('http', base, token);
    await suite.step('the flood\'s sessions close', async () => {
        for (const [c, hs] of [[stdio, made.stdio], [http, made.http]])
            for (const h of hs) {
                const r = await c.close(h);
                check(r.isError !== true && r.structuredContent?.closed === true, `close ${h}`, r);
            }
    });
    await closeQuietly(stdio);
    await closeQuietly(http);
}

// ---- attacks: the cases -----------------------------------------------------------------------

async function casesPart() {
    const c = await v1Client('stdio');
    const lost = (sc) => sc.session_lost === true;
    // One session per case; then the case's checks; then it is closed (if it lives), no session
    // unit may be left, and a stateless exec must work. A case returns true if its session must
    // still live, false if it must be gone, null if it may be either.
    const kase = async (name, fn, timeoutMs = 90000) => {
        await suite.step(name, async () => {
            const h = created(await c.create(), name).session;
            execResult(await c.exec('state = "kept"', h), `${name}: set up`);
            let alive;
            try {
                alive = await fn(h);
            } finally {
                const r = await c.close(h);
                if (alive === true) check(r.isError !== true, `${name}: close of a session that should live`, r);
                if (alive === false) gone(r, `${name}: close of a lost session`);
                if (alive === null && r.isError === true) gone(r, `${name}: close`);
            }
            await waitNoSessionUnits(name);
            const s = execResult(await c.exec('print(6 * 7)'), `${name}: stateless afterwards`);
            check(s.stdout === '42\n', `${name}: a stateless exec afterwards`, s);
        }, { timeoutMs });
    };
    const text = (res) => toolErrorText(res);

    await kase('memory growth to OOM: the session is lost, the result says so', async (h) => {
        const res = await c.exec('a = []\nwhile True:\n    a.append(b"x" * (16 << 20))', h, { timeout_s: 60 });
        const sc = execResult(res, 'oom');
        log(`  oom: ${short({ exit_code: sc.exit_code, signal: sc.signal, oom_killed: sc.oom_killed, lost: sc.session_lost })}`);
        check(lost(sc) && sc.exit_code !== 0 && !sc.timed_out, 'oom: the call', sc);
        check(/session is lost/i.test(text(res)) && /out of memory/.test(text(res)), 'oom: no note that the session is lost', res.content);
        gone(await c.exec('print(state)', h), 'oom: the handle afterwards');
        return false;
    });

    await kase('a fork bomb: TasksMax holds, the session is usable or lost', async (h) => {
        const units = await sessionUnits();
        check(units.length === 1, 'one session unit', units);
        const max = Number((await sh('systemctl', ['show', '-P', 'TasksMax', units[0]])).stdout.trim());
        check(max > 0 && max < 100000, 'TasksMax of the session unit', max);
        // Tasks counted while the bomb runs: never more than TasksMax.
        let peak = 0, sampling = true;
        const sampler = (async () => {
            while (sampling) {
                const t = Number((await sh('systemctl', ['show', '-P', 'TasksCurrent', units[0]])).stdout.trim());
                if (Number.isFinite(t)) peak = Math.max(peak, t);
                await sleep(100);
            }
        })();
        const res = await c.exec('import os\nwhile True:\n    os.fork()', h, { timeout_s: 5 });
        sampling = false;
        await sampler;
        const sc = execResult(res, 'fork bomb');
        log(`  fork bomb: TasksMax ${max}, peak TasksCurrent ${peak}; ${short({ exit_code: sc.exit_code, signal: sc.signal, timed_out: sc.timed_out, lost: sc.session_lost })}`);
        check(peak <= max, 'fork bomb: more tasks than TasksMax', { peak, max });
        const after = await c.exec('print(state)', h, { timeout_s: 10 });
        if (lost(sc)) {
            gone(after, 'fork bomb: the handle of the lost session');
            return false;
        }
        // Not lost by the call: what the bomb left behind may still end the session (its
        // children fork on, and may run it out of memory), before the next call (gone) or
        // during it (that call says the session is lost); if not, its state is there.
        if (after.isError === true) {
            gone(after, 'fork bomb: the session after the call');
            return false;
        }
        const sa = execResult(after, 'fork bomb: after');
        if (lost(sa)) {
            check(/session is lost/i.test(text(after)), 'fork bomb: no note that the session is lost', after.content);
            log(`  fork bomb: the session was lost in the next call (oom_killed ${sa.oom_killed})`);
            gone(await c.exec('print(state)', h), 'fork bomb: the handle after the loss');
            return false;
        }
        check(sa.stdout === 'kept\n', 'fork bomb: the session afterwards', after);
        return null;
    });

    await kase('a thread printing forever: later calls get none of its between-call output', async (h) => {
        const start = `import sys, threading, time
n = 0
def chatter():
    global n
    while True:
        n += 1
        sys.stdout.write("SPAM %d\\n" % n)
        time.sleep(0.005)
threading.Thread(target=chatter, daemon=True).start()
time.sleep(0.05)
`;
        execResult(await c.exec(start, h), 'thread: start');
        let last = 0;
        for (let i = 0; i < 3; i++) {
            await sleep(500);
            // One write per line: print() writes its pieces apart, and the thread's lines may
            // come between them.
            const sc = execResult(await c.exec('sys.stdout.write("BEGIN %d\\n" % n)\nsys.stdout.write("mine\\n")', h),
                `thread: call ${i}`);
            const begin = Number(/^BEGIN (\d+)$/m.exec(sc.stdout)?.[1]);
            const spam = [...sc.stdout.matchAll(/^SPAM (\d+)$/gm)].map((m) => Number(m[1]));
            check(Number.isFinite(begin) && /^mine$/m.test(sc.stdout), `thread: call ${i} output`, sc.stdout);
            // Half a second between calls is ~100 lines; the test can fail only if they were printed.
            check(begin - last > 20, `thread: the thread did not print between calls (${last} -> ${begin})`);
            // Lines of the call's own time may be there (begin - 2: a line straddling its start).
            const early = spam.filter((k) => k < begin - 2);
            check(early.length === 0, `thread: call ${i} got ${early.length} lines printed before it began (BEGIN ${begin})`, early.slice(0, 10));
            last = begin;
        }
        // One write, as above: print() would write "kept" and its newline apart.
        const sc = execResult(await c.exec('sys.stdout.write(state + "\\n")', h), 'thread: state');
        check(/^kept$/m.test(sc.stdout), 'thread: the session works', sc);
        return true;
    });

    await kase('closing stdout (os.close(1)): the session stays, the next call has a stdout', async (h) => {
        const a = execResult(await c.exec('import os, sys\nprint("before", flush=True)\nos.close(1)\nprint("lost line")', h), 'close(1)');
        check(a.session_lost === false && a.stdout === 'before\n' && a.exit_code === 1 && /Bad file descriptor/.test(a.stderr), 'close(1): the call', a);
        const b = execResult(await c.exec('import os\nos.close(1)\nos.close(2)\nos.close(0)', h), 'close(0, 1, 2)');
        check(b.session_lost === false, 'close(0, 1, 2): the call', b);
        const d = execResult(await c.exec('print(state)', h), 'close(1): after');
        check(d.stdout === 'kept\n' && d.exit_code === 0, 'close(1): the next call', d);
        return true;
    });

    await kase('os._exit mid-call: the session is lost, the result says so', async (h) => {
        const res = await c.exec('import os\nprint("bye", flush=True)\nos._exit(3)', h);
        const sc = execResult(res, 'os._exit');
        check(lost(sc) && sc.exit_code === 3 && sc.stdout === 'bye\n', 'os._exit: the call', sc);
        check(/session is lost/i.test(text(res)), 'os._exit: no note', res.content);
        gone(await c.exec('print(state)', h), 'os._exit: the handle afterwards');
        return false;
    });

    await kase('os._exit from a thread between calls: the next call says gone', async (h) => {
        execResult(await c.exec('import os, threading, time\nthreading.Thread(target=lambda: (time.sleep(0.2), os._exit(0))).start()', h), 'thread exit');
        await sleep(1500);
        gone(await c.exec('print(state)', h), 'thread exit: the handle afterwards');
        return false;
    });

    await kase('a call past its timeout: KeyboardInterrupt, timed_out, the session stays', async (h) => {
        const sc = execResult(await c.exec('import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    print("interrupted")\n    raise', h, { timeout_s: 1 }), 'timeout');
        check(sc.timed_out === true && sc.session_lost === false && sc.stdout === 'interrupted\n' && /KeyboardInterrupt/.test(sc.stderr), 'timeout: the call', sc);
        const d = execResult(await c.exec('print(state)', h), 'timeout: after');
        check(d.stdout === 'kept\n', 'timeout: the state', d);
        return true;
    });

    await kase('a call that ignores SIGINT: killed after the grace, the session is lost', async (h) => {
        const t0 = Date.now();
        const res = await c.exec('import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.1)', h, { timeout_s: 1 });
        const dt = Date.now() - t0;
        const sc = execResult(res, 'SIGINT ignored');
        log(`  SIGINT ignored: lost after ${dt} ms`);
        check(sc.timed_out === true && lost(sc), 'SIGINT ignored: the call', sc);
        check(/session is lost/i.test(text(res)) && /did not stop/.test(text(res)), 'SIGINT ignored: no note', res.content);
        check(dt >= 2500, `SIGINT ignored: lost after ${dt} ms, before timeout + grace`);
        gone(await c.exec('print(state)', h), 'SIGINT ignored: the handle afterwards');
        return false;
    });

    await kase('a second call while one runs: busy, and the first finishes', async (h) => {
        const first = c.exec('import time\ntime.sleep(3)\nprint("first")', h);
        await sleep(1000);
        const second = await c.exec('print("second")', h);
        check(second.isError === true && /^the session is busy/.test(text(second)), 'busy: the second call', second);
        const sc = execResult(await first, 'busy: the first');
        check(sc.stdout === 'first\n' && sc.session_lost === false, 'busy: the first call', sc);
        const d = execResult(await c.exec('print(state)', h), 'busy: after');
        check(d.stdout === 'kept\n', 'busy: the state', d);
        return true;
    });

    await kase('a forked child that returns: later calls run in the session\'s interpreter', async (h) => {
        const a = execResult(await c.exec('import os\nmain_pid = os.getpid()\nchild = os.fork()\nprint("parent" if child else "child")', h), 'fork');
        check(a.session_lost === false && /parent/.test(a.stdout), 'fork: the call', a);
        for (let i = 0; i < 4; i++) {
            const b = execResult(await c.exec('print(os.getpid() == main_pid, state)', h), `fork: call ${i}`);
            check(b.stdout === 'True kept\n', `fork: call ${i} ran elsewhere`, b);
        }
        return true;
    });

    await closeQuietly(c);
}

// ---- what a session costs ---------------------------------------------------------------------

// ---- one call, for the shell ------------------------------------------------------------------

async function callPart(kind, tool, args, base, token) {
    const c = kind === 'stdio' ? await v1Client('stdio') : await v2Client('http', base, token);
    const res = await c.call(tool, JSON.parse(args), { timeout: 120000 });
    process.stdout.write(JSON.stringify(res) + '\n');
    await closeQuietly(c);
    process.exit(0);
}

try {
    if (/^v[12]-(stdio|http|sse)$/.test(part ?? '')) await clientsPart(part, rest[0], rest[1]);
    else if (part === 'guess') await guessPart();
    else if (part === 'scopes') await scopesPart(rest[0], rest[1]);
    else if (part === 'flood') await floodPart(Number(rest[0]), rest[1], rest[2]);
    else if (part === 'close-flood') await closeFloodPart(rest[0], rest[1]);
    else if (part === 'cases') await casesPart();
    else if (part === 'call') await callPart(rest[0], rest[1], rest[2], rest[3], rest[4]);
    else {
        log('usage: node sessions.mjs v1-stdio|v1-http|v1-sse|v2-stdio|v2-http|guess|scopes|flood|close-flood|cases|call ...');
        process.exit(2);
    }
} catch (e) {
    await suite.step('connect', () => {
        throw e;
    });
}
suite.finish();
