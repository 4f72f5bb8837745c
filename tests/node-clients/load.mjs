// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/load.mjs - load on every transport at once, with real clients (the v1 SDK Client
// over StdioClientTransport spawning `mcp-exec stdio`, StreamableHTTPClientTransport and
// SSEClientTransport), and raw HTTP for what an SDK does not let us hold open by the hundred.
// Driven by tests/integration/load/test-load.sh; parameters come from the environment (LOAD_*).
//
//   node load.mjs runs      LOAD_STDIO/LOAD_HTTP/LOAD_SSE clients of each kind at once, each with
//                           LOAD_INFLIGHT calls in flight, LOAD_RUNS calls in all (stopped early
//                           at LOAD_DEADLINE_MS, said in the summary); every result checked exactly.
//                           Prints one JSON summary line on stdout.
//   node load.mjs bench     one stdio client: LOAD_BENCH calls one at a time, then as many with 4
//                           in flight; prints runs/s of each (not asserted).
//   node load.mjs streams   holds LOAD_LEGACY legacy /sse streams and LOAD_SESSIONS Streamable HTTP
//                           sessions with a GET stream, then LOAD_POSTS calls per session with
//                           progress (each an SSE response stream), checks new clients are served
//                           meanwhile, the 429 and 503 limits, then cancels and closes everything.
//                           Hands off with the wrapper through marker files (held / sampled).
//   node load.mjs busy      LOAD_BUSY_CLIENTS HTTP clients (Streamable and SSE) fire LOAD_BUSY_CALLS
//                           calls at once against MAX_CONCURRENT=1, MAX_QUEUE=LOAD_QUEUE: 1 +
//                           LOAD_QUEUE run and print their own value, the rest are refused as busy
//                           before the first run ends; meanwhile 2 stdio clients (the other front
//                           end) fire 1 + LOAD_QUEUE calls, which all run in the shared broker.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import http from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { MCP_EXEC, STATE, STDIO_ARGS, Suite, check, execResult, log, mark, short, toolErrorText, waitMarker } from './lib.mjs';

const env = (k, d) => (process.env[k] === undefined || process.env[k] === '' ? d : process.env[k]);
const num = (k, d) => Number(env(k, d));
const BASE = env('LOAD_URL', 'http://127.0.0.1:8080');
const TOKEN = env('LOAD_TOKEN', '');
const AUTH = { 'X-MCP-AUTH': TOKEN };
const CALL_TIMEOUT_MS = num('LOAD_CALL_TIMEOUT_MS', 180000);
const PV = '2025-11-25';

// --- real SDK clients ---------------------------------------------------------------------------

async function connect(kind, name) {
    const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
    let transport;
    if (kind === 'stdio') transport = new StdioClientTransport({ command: MCP_EXEC, args: STDIO_ARGS, stderr: 'inherit' });
    else if (kind === 'http') transport = new StreamableHTTPClientTransport(new URL(BASE + '/mcp'), { requestInit: { headers: AUTH } });
    else if (kind === 'sse') transport = new SSEClientTransport(new URL(BASE + '/sse'), { requestInit: { headers: AUTH } });
    else throw new Error('unknown transport ' + kind);
    await client.connect(transport);
    // The v1 client validates structuredContent against the outputSchema it learned here.
    await client.listTools();
    return { kind, client, transport };
}

async function disconnect(c) {
    if (c.kind === 'http') await c.transport.terminateSession().catch(() => {});
    await c.client.close().catch(() => {});
}

// Call number i of client ci: a value only this call can print; every 4th call echoes its stdin.
function job(tag, i) {
    const v = (i * 7919 + tag.length * 104729) % 1000003;
    if (i % 4 === 3) {
        const stdin = `in-${tag}-${i}\n${'z'.repeat(i % 50)}\n`;
        return {
            args: { code: 'import sys\nd = sys.stdin.read()\nprint(len(d), d[::-1], end="")\n', stdin, timeout_s: 60 },
            want: `${stdin.length} ${[...stdin].reverse().join('')}`,
        };
    }
    return { args: { code: `print("out-${tag}-${i}", ${i} * 7919 % 1000003)\n`, timeout_s: 60 }, want: `out-${tag}-${i} ${(i * 7919) % 1000003}\n` };
}

async function callChecked(c, tag, i) {
    const { args, want } = job(tag, i);
    const res = await c.client.callTool({ name: 'exec', arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS });
    if (res.isError) throw new Error(`call ${tag}#${i} isError: ${short(toolErrorText(res), 300)}`);
    const sc = execResult(res, `call ${tag}#${i}`);
    check(sc.stdout === want && sc.stderr === '' && sc.exit_code === 0 && !sc.truncated && !sc.timed_out && !sc.oom_killed,
        `call ${tag}#${i}: wrong result (want stdout ${JSON.stringify(want)})`, sc);
    return sc;
}

async function runs() {
    const kinds = [];
    for (const [k, n] of [['stdio', num('LOAD_STDIO', 4)], ['http', num('LOAD_HTTP', 4)], ['sse', num('LOAD_SSE', 4)]])
        for (let j = 0; j < n; j++) kinds.push(k);
    const total = num('LOAD_RUNS', 600), inflight = num('LOAD_INFLIGHT', 2);
    const deadline = Date.now() + num('LOAD_DEADLINE_MS', 120000);
    const perClient = Math.ceil(total / kinds.length);
    const t0 = Date.now();
    const stats = { runs: 0, ok: 0, failed: 0, failures: [], per: { stdio: 0, http: 0, sse: 0 }, clients: kinds.length, stoppedEarly: false };

    const clients = await Promise.all(kinds.map((k, ci) => connect(k, `load-${k}-${ci}`)));
    const tConnected = Date.now();
    await Promise.all(clients.map(async (c, ci) => {
        const tag = `${c.kind}${ci}`;
        let next = 0;
        const worker = async () => {
            while (next < perClient) {
                if (Date.now() > deadline) {
                    stats.stoppedEarly = true;
                    return;
                }
                const i = next++;
                stats.runs++;
                try {
                    await callChecked(c, tag, i);
                    stats.ok++;
                    stats.per[c.kind]++;
                } catch (e) {
                    stats.failed++;
                    if (stats.failures.length < 10) stats.failures.push(String(e.message || e).slice(0, 600));
                }
            }
        };
        await Promise.all(Array.from({ length: inflight }, worker));
    }));
    const wallMs = Date.now() - tConnected;
    await Promise.all(clients.map(disconnect));
    stats.wallMs = wallMs;
    stats.connectMs = tConnected - t0;
    stats.runsPerSec = +(stats.ok / (wallMs / 1000)).toFixed(2);
    process.stdout.write(JSON.stringify(stats) + '\n');
    process.exit(stats.failed === 0 && stats.ok > 0 ? 0 : 1);
}

async function bench() {
    const n = num('LOAD_BENCH', 20);
    const c = await connect('stdio', 'load-bench');
    const out = {};
    for (const par of [1, 4]) {
        let next = 0;
        const t = Date.now();
        await Promise.all(Array.from({ length: par }, async () => {
            while (next < n) await callChecked(c, `bench${par}`, next++);
        }));
        out[`c${par}`] = +(n / ((Date.now() - t) / 1000)).toFixed(2);
    }
    await disconnect(c);
    process.stdout.write(JSON.stringify(out) + '\n');
    process.exit(0);
}

// --- raw HTTP streams ---------------------------------------------------------------------------

const decoder = () => new TextDecoder();

// fetch() for the raw parts, on node:http with one connection per request (Connection: close):
// global fetch (undici) keeps idle connections in its pool and, after an aborted stream, holds
// or reopens sockets for seconds, and the server counts every connection against its limit of
// 256. Here a closed stream is a closed socket at once, and the counts are ours.
function hfetch(url, { method = 'GET', headers = {}, body, signal } = {}) {
    return new Promise((resolve, reject) => {
        const req = http.request(url, { method, headers, agent: false }, (res) => {
            resolve({
                status: res.statusCode,
                headers: { get: (n) => res.headers[n.toLowerCase()] ?? null },
                get body() {
                    return Readable.toWeb(res);
                },
                text: async () => {
                    let t = '';
                    res.setEncoding('utf8');
                    for await (const chunk of res) t += chunk;
                    return t;
                },
            });
        });
        req.on('error', reject);
        if (signal) signal.addEventListener('abort', () => req.destroy(new Error('aborted')), { once: true });
        req.end(body);
    });
}

// An open SSE response: collects events, can wait for one, can be closed.
class Sse {
    constructor(label, res, ac) {
        this.label = label;
        this.res = res;
        this.ac = ac;
        this.events = [];
        this.ended = false;
        this.waiters = [];
        this.buf = '';
        this.done = this.pump();
    }
    async pump() {
        const reader = this.res.body.getReader();
        const dec = decoder();
        try {
            for (;;) {
                const { value, done } = await reader.read();
                if (done) break;
                this.buf += dec.decode(value, { stream: true });
                let k;
                while ((k = this.buf.indexOf('\n\n')) >= 0) {
                    const block = this.buf.slice(0, k);
                    this.buf = this.buf.slice(k + 2);
                    const ev = { event: 'message', data: '' };
                    let any = false;
                    for (const line of block.split('\n')) {
                        if (line.startsWith('event:')) ev.event = line.slice(6).trim();
                        else if (line.startsWith('data:')) {
                            ev.data += (any ? '\n' : '') + line.slice(5).replace(/^ /, '');
                            any = true;
                        }
                    }
                    if (any) this.events.push(ev);
                }
                this.wake();
            }
        } catch {
            // aborted by us, or the connection broke
        }
        this.ended = true;
        this.wake();
    }
    wake() {
        const w = this.waiters;
        this.waiters = [];
        for (const f of w) f();
    }
    async waitFor(pred, ms, what) {
        const deadline = Date.now() + ms;
        for (;;) {
            const e = this.events.find(pred);
            if (e) return e;
            if (this.ended) throw new Error(`${this.label}: stream ended while waiting for ${what}`);
            if (Date.now() > deadline) throw new Error(`${this.label}: no ${what} within ${ms} ms; got ${short(this.events.slice(-3))}`);
            await new Promise((r) => {
                this.waiters.push(r);
                setTimeout(r, 250);
            });
        }
    }
    async waitEnd(ms) {
        const deadline = Date.now() + ms;
        while (!this.ended) {
            if (Date.now() > deadline) throw new Error(`${this.label}: the stream did not end within ${ms} ms`);
            await new Promise((r) => {
                this.waiters.push(r);
                setTimeout(r, 250);
            });
        }
    }
    close() {
        this.ac.abort();
        return this.done;
    }
}

async function openLegacy(i) {
    const ac = new AbortController();
    const res = await hfetch(BASE + '/sse', { headers: { ...AUTH, Accept: 'text/event-stream' }, signal: ac.signal });
    if (res.status !== 200) {
        const body = await res.text().catch(() => '');
        ac.abort();
        return { status: res.status, retryAfter: res.headers.get('retry-after'), body };
    }
    const s = new Sse(`legacy#${i}`, res, ac);
    const ep = await s.waitFor((e) => e.event === 'endpoint', 20000, 'endpoint event');
    s.endpoint = ep.data;
    check(/^\/messages\?sessionId=[a-z0-9-]{1,32}\.[0-9a-f]{32}$/.test(ep.data), `legacy#${i}: endpoint`, ep.data);
    return { status: 200, s };
}

async function legacyPost(s, msg) {
    const res = await hfetch(BASE + s.endpoint, {
        method: 'POST',
        headers: { ...AUTH, 'Content-Type': 'application/json' },
        body: JSON.stringify(msg),
    });
    return { status: res.status, body: await res.text() };
}

function mcpHeaders(sid, extra = {}) {
    const h = { ...AUTH, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...extra };
    if (sid) {
        h['Mcp-Session-Id'] = sid;
        h['MCP-Protocol-Version'] = PV;
    }
    return h;
}

async function initSession(label) {
    const res = await hfetch(BASE + '/mcp', {
        method: 'POST',
        headers: mcpHeaders(null),
        body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
            params: { protocolVersion: PV, capabilities: {}, clientInfo: { name: label, version: '1' } } }),
    });
    const body = await res.text();
    if (res.status !== 200) return { status: res.status, retryAfter: res.headers.get('retry-after'), body };
    const sid = res.headers.get('mcp-session-id');
    check(sid && JSON.parse(body).result?.protocolVersion === PV, `${label}: initialize`, body);
    const r2 = await hfetch(BASE + '/mcp', { method: 'POST', headers: mcpHeaders(sid),
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    await r2.text();
    check(r2.status === 202, `${label}: notifications/initialized`, r2.status);
    return { status: 200, sid, label };
}

async function openGet(sess) {
    const ac = new AbortController();
    const res = await hfetch(BASE + '/mcp', { headers: { ...mcpHeaders(sess.sid), Accept: 'text/event-stream' }, signal: ac.signal });
    check(res.status === 200 && /text\/event-stream/.test(res.headers.get('content-type') || ''),
        `${sess.label}: GET stream`, { status: res.status, body: res.status === 200 ? '' : await res.text() });
    return new Sse(`${sess.label} GET`, res, ac);
}

// A tools/call with a progress token: its response is an SSE stream that stays open until the
// reply (or the cancellation) comes.
async function postCall(sess, id, code) {
    const ac = new AbortController();
    const res = await hfetch(BASE + '/mcp', {
        method: 'POST',
        headers: mcpHeaders(sess.sid),
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
            params: { name: 'exec', arguments: { code, timeout_s: 120 }, _meta: { progressToken: `p-${id}` } } }),
        signal: ac.signal,
    });
    if (res.status !== 200 || !/text\/event-stream/.test(res.headers.get('content-type') || '')) {
        const body = await res.text().catch(() => '');
        return { status: res.status, body };
    }
    return { status: 200, s: new Sse(`${sess.label} call ${id}`, res, ac) };
}

async function sessionPost(sess, msg) {
    const res = await hfetch(BASE + '/mcp', { method: 'POST', headers: mcpHeaders(sess.sid), body: JSON.stringify(msg) });
    const body = await res.text();
    return { status: res.status, body };
}

async function inBatches(items, n, fn) {
    const out = [];
    for (let k = 0; k < items.length; k += n) out.push(...(await Promise.all(items.slice(k, k + n).map(fn))));
    return out;
}

async function oneCall(kind, label) {
    const c = await connect(kind, label);
    await callChecked(c, label, 1);
    await callChecked(c, label, 3); // stdin
    await disconnect(c);
}

async function streams() {
    const suite = new Suite('load streams');
    const nLegacy = num('LOAD_LEGACY', 100), nSess = num('LOAD_SESSIONS', 20), nPosts = num('LOAD_POSTS', 4);
    const maxSessions = num('LOAD_MAX_SESSIONS', 128), maxStreams = num('LOAD_MAX_STREAMS', 16);
    const release = join(STATE, 'release');
    // Waits for the wrapper's release file (the sandbox sees /srv read-only), at most 110 s.
    const blocker = (id) => `import os, time\nfor _ in range(550):\n    if os.path.exists(${JSON.stringify(release)}): break\n    time.sleep(0.2)\nprint("held-${id}")\n`;
    let legacy = [], sessions = [], gets = [], posts = [];
    const extra = [];

    await suite.step(`open ${nLegacy} legacy /sse streams`, async () => {
        const r = await inBatches([...Array(nLegacy).keys()], 25, openLegacy);
        const bad = r.filter((x) => x.status !== 200);
        check(bad.length === 0, `${bad.length} refused`, bad.slice(0, 3));
        legacy = r.map((x) => x.s);
    }, { fatal: true, timeoutMs: 120000 });

    await suite.step(`open ${nSess} Streamable HTTP sessions, each with a GET stream`, async () => {
        const r = await inBatches([...Array(nSess).keys()], 10, (i) => initSession(`sess#${i}`));
        const bad = r.filter((x) => x.status !== 200);
        check(bad.length === 0, `${bad.length} refused`, bad.slice(0, 3));
        sessions = r;
        gets = await inBatches(sessions, 10, openGet);
    }, { fatal: true, timeoutMs: 120000 });

    await suite.step('a second GET stream on a session is refused with 409', async () => {
        const res = await hfetch(BASE + '/mcp', { headers: { ...mcpHeaders(sessions[0].sid), Accept: 'text/event-stream' } });
        const body = await res.text();
        check(res.status === 409, 'status', { status: res.status, body });
    });

    await suite.step('new clients on every transport are served while the streams are open', async () => {
        await Promise.all([oneCall('http', 'new-http'), oneCall('sse', 'new-sse'), oneCall('stdio', 'new-stdio')]);
    }, { timeoutMs: 120000 });

    await suite.step(`${nPosts} calls with progress in each session: ${nSess * nPosts} more open response streams`, async () => {
        const jobs = [];
        for (const [si, sess] of sessions.entries()) for (let k = 0; k < nPosts; k++) jobs.push([sess, `c${si}-${k}`]);
        const r = await inBatches(jobs, 20, ([sess, id]) => postCall(sess, id, blocker(id)).then((x) => ({ ...x, sess, id })));
        const bad = r.filter((x) => x.status !== 200);
        check(bad.length === 0, `${bad.length} calls did not get a stream`, bad.slice(0, 3));
        posts = r;
        // Each stream says at once whether its call is queued or started.
        await Promise.all(posts.map((p) => p.s.waitFor((e) => /notifications\/progress/.test(e.data), 60000, 'first progress')));
    }, { fatal: true, timeoutMs: 180000 });

    const perSession = 1 + nPosts; // the GET stream and the calls
    await suite.step(`stream limit: ${maxStreams} streams in one session, the next gets 429`, async () => {
        const sess = sessions[0];
        for (let k = perSession; k < maxStreams; k++) {
            const p = await postCall(sess, `x${k}`, blocker(`x${k}`));
            check(p.status === 200, `stream ${k + 1} of ${maxStreams}`, p);
            posts.push({ ...p, sess, id: `x${k}` });
        }
        const p = await postCall(sess, 'x-over', 'print(1)');
        check(p.status === 429 && /too many streams/i.test(p.body), `stream ${maxStreams + 1}`, p);
        if (p.s) posts.push({ ...p, sess, id: 'x-over' });
    }, { timeoutMs: 60000 });

    const open = () => legacy.length + gets.length + posts.filter((p) => !p.s.ended).length;
    log(`load streams: ${open()} streams open (${legacy.length} legacy, ${gets.length} GET, ${posts.length} POST), ` +
        `${legacy.length + sessions.length} sessions`);
    mark('held', String(open()));
    await suite.step('the wrapper sampled the daemon meanwhile', () => waitMarker('sampled', 60000, 'sampled'), { timeoutMs: 61000 });

    await suite.step('session limit: the server answers 503 with Retry-After, not a hang', async () => {
        const room = maxSessions - legacy.length - sessions.length;
        for (let k = 0; k < room; k++) {
            // The new clients' sessions above may take a moment to go.
            let r;
            for (let t = 0; t < 50; t++) {
                r = await openLegacy(`fill${k}`);
                if (r.status !== 503) break;
                await sleep(200);
            }
            check(r.status === 200, `session ${legacy.length + sessions.length + extra.length + 1} of ${maxSessions}`, r);
            extra.push(r.s);
        }
        const r1 = await openLegacy('over');
        check(r1.status === 503 && r1.retryAfter && /too many sessions/i.test(r1.body), 'GET /sse past the limit', r1);
        // Every Streamable session has a stream open, so none may be evicted for a new one.
        const r2 = await initSession('over');
        check(r2.status === 503 && r2.retryAfter && /too many sessions/i.test(r2.body), 'initialize past the limit', r2);
        // A stateless (2026-07-28) request needs no session: answered (tools/list, no run).
        const res = await hfetch(BASE + '/mcp', {
            method: 'POST',
            headers: { ...mcpHeaders(null), 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: {
                'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }),
        });
        const body = await res.text();
        check(res.status === 200 && /"name":"exec"/.test(body), 'a stateless tools/list at the session limit', { status: res.status, body });
        // Room comes back when a session ends.
        await extra.pop().close();
        let again;
        for (let t = 0; t < 50; t++) {
            again = await openLegacy('again');
            if (again.status === 200) break;
            await sleep(200);
        }
        check(again.status === 200, 'GET /sse after one session ended', again);
        extra.push(again.s);
    }, { timeoutMs: 120000 });

    await suite.step('every held legacy stream still carries replies (ping on each)', async () => {
        const all = [...legacy, ...extra];
        const st = await inBatches(all, 10, (s, k) => legacyPost(s, { jsonrpc: '2.0', id: `ping-${k}`, method: 'ping' }));
        check(st.every((x) => x.status === 202), 'POST /messages status', st.filter((x) => x.status !== 202).slice(0, 3));
        await Promise.all(all.map((s) => s.waitFor((e) => e.event === 'message' && /"result":\{\}/.test(e.data), 30000, 'ping reply')));
    }, { timeoutMs: 120000 });

    await suite.step('cancel every call: each response stream ends, no reply', async () => {
        // Queued calls first: cancelling a running one first would start the next in its place.
        const running = (p) => p.s.events.some((e) => /"message":"(started|running)/.test(e.data));
        const order = [...posts.filter((p) => !running(p)).reverse(), ...posts.filter(running)];
        log(`load streams: cancelling ${order.length} calls, ${posts.filter(running).length} of them running`);
        for (const p of order) {
            const r = await sessionPost(p.sess, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: p.id, reason: 'load test' } });
            check(r.status === 202, `notifications/cancelled for ${p.id}`, r);
        }
        mark('release');
        await Promise.all(posts.map((p) => p.s.waitEnd(60000)));
        const replied = posts.filter((p) => p.s.events.some((e) => /"result"/.test(e.data) && /"id":/.test(e.data)));
        check(replied.length === 0, `${replied.length} cancelled calls got a result`, replied.slice(0, 2).map((p) => p.s.events));
    }, { timeoutMs: 120000 });

    await suite.step('close every stream and DELETE every session', async () => {
        await Promise.all([...legacy, ...extra, ...gets].map((s) => s.close()));
        const st = await inBatches(sessions, 10, async (sess) => {
            const res = await hfetch(BASE + '/mcp', { method: 'DELETE', headers: mcpHeaders(sess.sid) });
            return { status: res.status, body: await res.text() };
        });
        check(st.every((x) => x.status === 200), 'DELETE status', st.filter((x) => x.status !== 200).slice(0, 3));
        // A deleted session is gone.
        const r = await sessionPost(sessions[0], { jsonrpc: '2.0', id: 9, method: 'ping' });
        check(r.status === 404, 'a ping on a deleted session', r);
    }, { timeoutMs: 120000 });

    suite.finish();
}

// --- a full queue -------------------------------------------------------------------------------

// mcp-exec.service serves HTTP (Streamable and legacy SSE) and mcp-exec-stdio.service the local
// sessions: two front ends, each with its own queue (MAX_CONCURRENT running + MAX_QUEUE waiting),
// in front of one broker that runs MAX_CONCURRENT at once in all.
async function busy() {
    const suite = new Suite('load busy');
    const nHttp = num('LOAD_BUSY_CLIENTS', 4), nCalls = num('LOAD_BUSY_CALLS', 8), queue = num('LOAD_QUEUE', 3);
    const nStdio = 2, stdioCalls = 1 + queue; // exactly what the local front end takes
    let http = [], stdio = [];
    await suite.step(`connect ${nHttp} HTTP clients (Streamable and SSE) and ${nStdio} stdio clients`, async () => {
        http = await Promise.all(Array.from({ length: nHttp }, (_, k) => connect(k % 2 ? 'sse' : 'http', `busy-${k}`)));
        stdio = await Promise.all(Array.from({ length: nStdio }, (_, k) => connect('stdio', `busy-stdio-${k}`)));
    }, { fatal: true, timeoutMs: 60000 });

    await suite.step(`${nCalls} HTTP calls at once (room for 1 running + ${queue} queued) and ${stdioCalls} stdio calls`, async () => {
        const t0 = Date.now();
        const fire = (c, i) => {
            const code = `import time\ntime.sleep(1.5)\nprint("busy-call", ${i})\n`;
            return c.client.callTool({ name: 'exec', arguments: { code, timeout_s: 60 } }, undefined, { timeout: CALL_TIMEOUT_MS })
                .then((res) => ({ i, kind: c.kind, res, ms: Date.now() - t0 }), (err) => ({ i, kind: c.kind, err, ms: Date.now() - t0 }));
        };
        const [outcomes, local] = await Promise.all([
            Promise.all(Array.from({ length: nCalls }, (_, i) => fire(http[i % http.length], i))),
            Promise.all(Array.from({ length: stdioCalls }, (_, i) => fire(stdio[i % stdio.length], 100 + i))),
        ]);
        const line = (o) => `#${o.i} ${o.kind} ${o.ms} ms: ` +
            (o.err ? `threw ${o.err.message}` : o.res.isError ? `isError ${toolErrorText(o.res)}` : JSON.stringify(o.res.structuredContent?.stdout));
        const lines = [...outcomes, ...local].map(line);
        log('  ' + lines.join('\n  '));
        for (const o of [...outcomes, ...local]) check(!o.err, `call ${o.i} failed with a protocol error`, o.err?.message);
        // The local front end's calls all run, one at a time in the broker's single slot shared
        // with the HTTP front end: none is refused as busy by the broker.
        for (const o of local) {
            check(!o.res.isError, `stdio call ${o.i} was refused`, toolErrorText(o.res));
            check(execResult(o.res, `call ${o.i}`).stdout === `busy-call ${o.i}\n`, `call ${o.i} output`, o.res.structuredContent);
        }
        const ok = outcomes.filter((o) => !o.res.isError), refused = outcomes.filter((o) => o.res.isError);
        check(ok.length === 1 + queue && refused.length === nCalls - 1 - queue,
            `expected ${1 + queue} HTTP calls to run and ${nCalls - 1 - queue} to be refused`, lines);
        for (const o of refused)
            check(/server busy: .*queue of \d+ is full/.test(toolErrorText(o.res)), `refused call ${o.i} does not say busy`, toolErrorText(o.res));
        for (const o of ok)
            check(execResult(o.res, `call ${o.i}`).stdout === `busy-call ${o.i}\n`, `call ${o.i} output`, o.res.structuredContent);
        // Refused at once: every refusal came before the first run (1.5 s of sleep) could finish.
        const firstOk = Math.min(...ok.map((o) => o.ms), ...local.map((o) => o.ms)), lastRefused = Math.max(...refused.map((o) => o.ms));
        log(`  last refusal after ${lastRefused} ms, first result after ${firstOk} ms`);
        check(lastRefused < firstOk, 'a refusal came only after a run had finished: the full queue did not answer at once',
            { lastRefused, firstOk });
    }, { timeoutMs: 120000 });

    await suite.step('every client works again once the queues drained', async () => {
        for (const [k, c] of [...http, ...stdio].entries()) await callChecked(c, `after${k}`, k);
    }, { timeoutMs: 120000 });
    await Promise.all([...http, ...stdio].map(disconnect));
    suite.finish();
}

const commands = { runs, bench, streams, busy };
const cmd = commands[process.argv[2]];
if (!cmd) {
    log(`usage: node load.mjs ${Object.keys(commands).join('|')}`);
    process.exit(2);
}
await cmd();
