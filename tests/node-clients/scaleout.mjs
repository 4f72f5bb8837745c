// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/scaleout.mjs - real MCP clients through a load balancer in front of several
// mcp-exec hosts (tests/integration/load/test-scaleout-haproxy.sh). Every call runs
// `print(socket.gethostname())`, so the result names the host that ran it; the host that holds a
// session is the node prefix of its id ("exec1.<hex>").
//
// Environment: MCP_TEST_URL (the balancer, e.g. https://mcp-lb.test:8443), MCP_TEST_TOKEN,
// MCP_TEST_HOSTS ("exec1=hostname1,exec2=hostname2": node id to the hostname its runs print),
// MCP_TEST_STATE (marker files shared with the wrapper). Each command prints one JSON line (its
// findings) on stdout for the wrapper to judge, and its progress on stderr. Every HTTP response
// status the clients saw is counted ("statuses"), so a 5xx anywhere shows.
//
//   sessions N M          N sessions x M calls, v1 SDK (Streamable HTTP, 2025-11-25), 4 at once;
//                         a failed call ends its session and the next call starts a new one
//   stateless N           v2 client, auto negotiation (2026-07-28, no session): N calls, 4 at once
//   legacy N M            N legacy SSE sessions (v1 SSEClientTransport) x M calls
//   progress              a 4 s call with progress, v1 session and v2 stateless: when the
//                         notifications came, against when the result did
//   cancel v1|v2          a 30 s call with progress, aborted when the wrapper says so (marker
//                         cancel.go): v1 sends notifications/cancelled, v2 (stateless) closes the
//                         response stream
//   failover VICTIM       sessions on both hosts, a long call on VICTIM; then, as the wrapper takes
//                         VICTIM down in two ways, every session calls again (markers failover.*)
//   bench N C             N stateless calls of `pass`, C at once: runs per second
//   tasks N               N stateless calls of a 2 s run that declare the tasks extension (raw
//                         HTTPS, each request on a connection of its own): each becomes a task, and
//                         is polled with tasks/get (Mcp-Name: the task id) until it ends; every
//                         poll must find the task (not -32602) and the result must come from the
//                         host the task id names

import https from 'node:https';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MODERN, check, execResult, log, mark, modernMeta, short, toolErrorText, waitMarker, withTimeout } from './lib.mjs';

const BASE = process.env.MCP_TEST_URL;
const TOKEN = process.env.MCP_TEST_TOKEN;
const HEADERS = { 'X-MCP-AUTH': TOKEN };
const HOSTS = Object.fromEntries((process.env.MCP_TEST_HOSTS || '').split(',').filter(Boolean).map((p) => p.split('=')));
const HOST_CODE = 'import socket; print(socket.gethostname())';

// fetch for the SDK transports: counts response statuses, keeps the URLs asked for.
function recorder() {
    const rec = { statuses: {}, urls: [] };
    rec.fetch = async (url, init) => {
        rec.urls.push(String(url));
        const res = await fetch(url, init);
        rec.statuses[res.status] = (rec.statuses[res.status] || 0) + 1;
        return res;
    };
    return rec;
}

function fivexx(statuses) {
    return Object.entries(statuses)
        .filter(([s]) => Number(s) >= 500)
        .reduce((n, [, c]) => n + c, 0);
}

function nodeOf(id) {
    return typeof id === 'string' && id.includes('.') ? id.slice(0, id.indexOf('.')) : null;
}

function errorInfo(e) {
    return { code: e?.code ?? null, message: String(e?.message ?? e).slice(0, 300) };
}

async function v1Session(rec, name) {
    const client = new Client({ name, version: '1.0.0' });
    const t = new StreamableHTTPClientTransport(new URL(BASE + '/mcp'), { requestInit: { headers: HEADERS }, fetch: rec.fetch });
    try {
        await withTimeout(client.connect(t), 30000, 'connect');
    } catch (e) {
        await client.close().catch(() => {});
        throw e;
    }
    return { client, t, node: nodeOf(t.sessionId), id: t.sessionId };
}

async function v1End(s) {
    await withTimeout(s.t.terminateSession(), 10000, 'DELETE').catch(() => {});
    await s.client.close().catch(() => {});
}

async function hostCall(client, v2 = false, options = {}) {
    const params = { name: 'exec', arguments: { code: HOST_CODE } };
    const p = v2 ? client.callTool(params, options) : client.callTool(params, undefined, options);
    const r = await withTimeout(p, 90000, 'tools/call');
    return execResult(r, 'host call').stdout.trim();
}

async function v2Client(rec) {
    const { Client: Client2, StreamableHTTPClientTransport: Http2 } = await import('@modelcontextprotocol/client');
    const client = new Client2({ name: 'scaleout-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    const t = new Http2(new URL(BASE + '/mcp'), { requestInit: { headers: HEADERS }, fetch: rec.fetch });
    await withTimeout(client.connect(t), 30000, 'v2 connect');
    check(client.getNegotiatedProtocolVersion() === MODERN, 'v2 did not land on the stateless revision',
        client.getNegotiatedProtocolVersion());
    check(!t.sessionId, 'a stateless client got a session id', t.sessionId);
    return client;
}

async function pool(n, parallel, fn) {
    let next = 0;
    const worker = async () => {
        while (next < n) await fn(next++);
    };
    await Promise.all(Array.from({ length: Math.min(parallel, n) }, worker));
}

async function sessions(n, m) {
    const rec = recorder();
    const out = { sessions: {}, calls: 0, ok: 0, wrong: 0, errors: 0, new_sessions: 0, samples: [] };
    await pool(Number(n), 4, async (i) => {
        let s = null;
        for (let k = 0; k < Number(m); k++) {
            out.calls++;
            try {
                if (!s) {
                    s = await v1Session(rec, `scaleout-${i}`);
                    out.new_sessions++;
                    out.sessions[s.node] = (out.sessions[s.node] || 0) + 1;
                }
                const host = await hostCall(s.client);
                if (host === HOSTS[s.node]) out.ok++;
                else {
                    out.wrong++;
                    if (out.samples.length < 5) out.samples.push({ session: s.id, ran_on: host });
                }
            } catch (e) {
                out.errors++;
                if (out.samples.length < 5) out.samples.push(errorInfo(e));
                // A 404 means the session is gone: the spec tells the client to start a new one.
                if (s) await s.client.close().catch(() => {});
                s = null;
            }
        }
        if (s) await v1End(s);
    });
    out.statuses = rec.statuses;
    out.status_5xx = fivexx(rec.statuses);
    return out;
}

async function stateless(n) {
    const rec = recorder();
    const client = await v2Client(rec);
    const out = { calls: 0, hosts: {}, errors: 0, samples: [] };
    await pool(Number(n), 4, async () => {
        out.calls++;
        try {
            const host = await hostCall(client, true);
            out.hosts[host] = (out.hosts[host] || 0) + 1;
        } catch (e) {
            out.errors++;
            if (out.samples.length < 5) out.samples.push(errorInfo(e));
        }
    });
    await client.close().catch(() => {});
    out.statuses = rec.statuses;
    out.status_5xx = fivexx(rec.statuses);
    return out;
}

async function legacy(n, m) {
    const out = { sessions: {}, calls: 0, ok: 0, wrong: 0, errors: 0, samples: [], status_5xx: 0, statuses: {} };
    await pool(Number(n), 2, async (i) => {
        const rec = recorder();
        const client = new Client({ name: `scaleout-sse-${i}`, version: '1.0.0' });
        const t = new SSEClientTransport(new URL(BASE + '/sse'), { requestInit: { headers: HEADERS }, fetch: rec.fetch });
        try {
            await withTimeout(client.connect(t), 30000, 'sse connect');
            // The endpoint event told the client where to POST: /messages?sessionId=<node>.<hex>
            const post = rec.urls.find((u) => u.includes('/messages?sessionId='));
            check(post, 'no POST to the endpoint', rec.urls);
            const node = nodeOf(new URL(post).searchParams.get('sessionId'));
            check(HOSTS[node], 'the endpoint names no known node', post);
            out.sessions[node] = (out.sessions[node] || 0) + 1;
            for (let k = 0; k < Number(m); k++) {
                out.calls++;
                const host = await hostCall(client);
                if (host === HOSTS[node]) out.ok++;
                else {
                    out.wrong++;
                    if (out.samples.length < 5) out.samples.push({ node, ran_on: host });
                }
            }
        } catch (e) {
            out.errors++;
            if (out.samples.length < 5) out.samples.push(errorInfo(e));
        }
        await client.close().catch(() => {});
        for (const [s, c] of Object.entries(rec.statuses)) out.statuses[s] = (out.statuses[s] || 0) + c;
        out.status_5xx += fivexx(rec.statuses);
    });
    return out;
}

// When progress came, relative to the call's start, and when the result did.
async function timedProgress(call) {
    const t0 = Date.now();
    const at = [];
    const res = await call(() => at.push(Date.now() - t0));
    const end = Date.now() - t0;
    const sc = execResult(res, 'progress call');
    check(sc.stdout.startsWith('0\n') && sc.exit_code === 0, 'progress call result', sc);
    return { progress_ms: at, result_ms: end, early: at.filter((t) => t <= end - 1000).length };
}

async function progress() {
    const rec = recorder();
    const code = 'import time\nfor i in range(8):\n    print(i, flush=True)\n    time.sleep(0.5)\n';
    const params = { name: 'exec', arguments: { code } };
    const s = await v1Session(rec, 'scaleout-progress');
    const v1 = await timedProgress((onprogress) => s.client.callTool(params, undefined, { onprogress, timeout: 60000 }));
    await v1End(s);
    const c2 = await v2Client(rec);
    const v2 = await timedProgress((onprogress) => c2.callTool(params, { onprogress, timeout: 60000 }));
    await c2.close().catch(() => {});
    return { v1, v2, statuses: rec.statuses, status_5xx: fivexx(rec.statuses) };
}

async function cancel(era) {
    const rec = recorder();
    const params = { name: 'exec', arguments: { code: 'import time\nprint("up", flush=True)\ntime.sleep(30)\n', timeout_s: 60 } };
    const ac = new AbortController();
    let s = null;
    let c2 = null;
    let p;
    // With progress, as a client that lets its user cancel shows it: the answer is an event
    // stream, so a balancer forwarding it notices a client that went away (HTTP/1.1 has no
    // other way to tell it).
    const onprogress = () => {};
    if (era === 'v1') {
        s = await v1Session(rec, 'scaleout-cancel');
        p = s.client.callTool(params, undefined, { signal: ac.signal, timeout: 120000, onprogress });
    } else {
        c2 = await v2Client(rec);
        p = c2.callTool(params, { signal: ac.signal, timeout: 120000, onprogress });
    }
    const settled = p.then(
        (r) => ({ kind: 'result', isError: r.isError === true, text: toolErrorText(r).slice(0, 300) }),
        (e) => ({ kind: 'error', ...errorInfo(e) }),
    );
    mark('cancel.sent', s ? s.node : '');
    await waitMarker('cancel.go', 60000, 'cancel');
    const t0 = Date.now();
    ac.abort();
    const outcome = await withTimeout(settled, 20000, 'the aborted call');
    outcome.ms = Date.now() - t0;
    mark('cancel.aborted', JSON.stringify(outcome));
    if (s) {
        // The session lives on after a cancellation.
        const host = await hostCall(s.client);
        outcome.after = host;
        await v1End(s);
    }
    if (c2) await c2.close().catch(() => {});
    return { era, node: s ? s.node : null, outcome, statuses: rec.statuses, status_5xx: fivexx(rec.statuses) };
}

async function failover(victim) {
    const rec = recorder();
    const other = Object.keys(HOSTS).find((n) => n !== victim);
    const ss = [];
    const count = (node) => ss.filter((s) => s.node === node).length;
    while ((count(victim) < 2 || count(other) < 2) && ss.length < 12) ss.push(await v1Session(rec, `scaleout-fo-${ss.length}`));
    check(count(victim) >= 2 && count(other) >= 2, 'round-robin did not give both hosts two sessions', ss.map((s) => s.node));
    for (const s of ss) check((await hostCall(s.client)) === HOSTS[s.node], 'a warm-up call ran on the wrong host');

    // A/ the victim's broker goes away: its runs stop, /healthz says 503, the balancer takes it out.
    const vs = ss.find((s) => s.node === victim);
    const long = vs.client
        .callTool(
            { name: 'exec', arguments: { code: 'import time\nprint("up", flush=True)\ntime.sleep(60)\n', timeout_s: 90 } },
            undefined,
            { timeout: 180000, onprogress: () => {} },
        )
        .then(
            (r) => ({ kind: 'result', isError: r.isError === true, text: toolErrorText(r).slice(0, 300) }),
            (e) => ({ kind: 'error', ...errorInfo(e) }),
        );
    mark('failover.long-sent', victim);
    await waitMarker('failover.down', 120000, 'failover A');
    const a = { long: await withTimeout(long, 30000, 'the long call after its host lost the broker'), sessions: [] };
    for (const s of ss) a.sessions.push(await callOrRestart(rec, s));
    mark('failover.a-done', JSON.stringify(a));

    // B/ the victim comes back, gets a session, and then its front end stops hard.
    await waitMarker('failover.up', 120000, 'failover B');
    let vb = null;
    for (let k = 0; k < 8 && !vb; k++) {
        const s = await v1Session(rec, `scaleout-fo-b${k}`);
        if (s.node === victim) vb = s;
        else await v1End(s);
    }
    check(vb, 'no new session landed on the victim after it came back');
    check((await hostCall(vb.client)) === HOSTS[victim], 'a call on the victim ran elsewhere');
    mark('failover.b-ready');
    await waitMarker('failover.stopped', 60000, 'failover B stop');
    const b = await callOrRestart(rec, vb);
    mark('failover.b-done', JSON.stringify(b));
    for (const s of ss) await s.client.close().catch(() => {});
    return { victim, a, b, statuses: rec.statuses, status_5xx: fivexx(rec.statuses) };
}

// One call on s; if it fails, what it failed with, and a call on a new session.
async function callOrRestart(rec, s) {
    const r = { node: s.node };
    try {
        r.host = await hostCall(s.client);
        r.ok = true;
    } catch (e) {
        r.ok = false;
        r.error = errorInfo(e);
        await s.client.close().catch(() => {});
        const n = await v1Session(rec, 'scaleout-fo-again');
        r.new_node = n.node;
        r.new_host = await hostCall(n.client);
        await v1End(n);
    }
    return r;
}

async function bench(n, c) {
    const rec = recorder();
    const client = await v2Client(rec);
    const hosts = {};
    let errors = 0;
    const params = { name: 'exec', arguments: { code: 'import socket; print(socket.gethostname())' } };
    // One round first: connections are set up and units and Python pages are warm.
    await pool(Number(c), Number(c), () => client.callTool(params));
    const t0 = process.hrtime.bigint();
    await pool(Number(n), Number(c), async () => {
        try {
            const r = await client.callTool(params);
            const h = execResult(r, 'bench').stdout.trim();
            hosts[h] = (hosts[h] || 0) + 1;
        } catch {
            errors++;
        }
    });
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    await client.close().catch(() => {});
    return { calls: Number(n), concurrency: Number(c), seconds: s, runs_per_s: Number(n) / s, hosts, errors };
}

// One 2026-07-28 request on a connection of its own (no keep-alive: a balancer sees each as a
// new client), with the headers that mirror it. Resolves to { status, body } (body parsed, or
// the raw text if it is no JSON).
function rawStateless(method, params, name) {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: modernMeta(params._meta) } });
    const headers = {
        ...HEADERS,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': MODERN,
        'Mcp-Method': method,
        'Content-Length': Buffer.byteLength(body),
    };
    if (name) headers['Mcp-Name'] = name;
    return new Promise((resolve, reject) => {
        const req = https.request(new URL(BASE + '/mcp'), { method: 'POST', headers, agent: false }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d) => (text += d));
            res.on('end', () => {
                let parsed = text;
                try {
                    parsed = JSON.parse(text);
                } catch {}
                resolve({ status: res.statusCode, body: parsed });
            });
        });
        req.setTimeout(60000, () => req.destroy(new Error(`${method}: no answer within 60 s`)));
        req.on('error', reject);
        req.end(body);
    });
}

async function tasks(n) {
    const statuses = {};
    const count = async (p) => {
        const r = await p;
        statuses[r.status] = (statuses[r.status] || 0) + 1;
        return r;
    };
    const out = { tasks: 0, ok: 0, polls: 0, not_found: 0, wrong: 0, errors: 0, nodes: {}, samples: [] };
    const ext = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
    const code = 'import socket, time\ntime.sleep(2)\nprint(socket.gethostname())\n';
    for (let i = 0; i < Number(n); i++) {
        try {
            const c = await count(rawStateless('tools/call', { name: 'exec', arguments: { code }, _meta: ext }, 'exec'));
            const h = c.body?.result;
            check(c.status === 200 && h?.resultType === 'task' && typeof h.taskId === 'string',
                'a 2 s call that declared the extension did not become a task', c);
            out.tasks++;
            const node = nodeOf(h.taskId);
            out.nodes[node] = (out.nodes[node] || 0) + 1;
            let t = null;
            for (let k = 0; k < 60; k++) {
                await new Promise((resolve) => setTimeout(resolve, 300));
                const g = await count(rawStateless('tasks/get', { taskId: h.taskId }, h.taskId));
                out.polls++;
                if (g.body?.error?.code === -32602) {
                    out.not_found++;
                    if (out.samples.length < 5) out.samples.push({ task: h.taskId, poll: k, error: g.body.error });
                    continue;
                }
                check(g.status === 200 && g.body?.result?.resultType === 'complete', 'tasks/get', g);
                if (g.body.result.status !== 'working') {
                    t = g.body.result;
                    break;
                }
            }
            check(t && t.status === 'completed', 'the task did not complete', t);
            const host = execResult(t.result, 'task result').stdout.trim();
            if (host === HOSTS[node]) out.ok++;
            else {
                out.wrong++;
                if (out.samples.length < 5) out.samples.push({ task: h.taskId, ran_on: host });
            }
        } catch (e) {
            out.errors++;
            if (out.samples.length < 5) out.samples.push(errorInfo(e));
        }
    }
    out.statuses = statuses;
    out.status_5xx = fivexx(statuses);
    return out;
}

const commands = { sessions, stateless, legacy, progress, cancel, failover, bench, tasks };
const [cmd, ...args] = process.argv.slice(2);
if (!commands[cmd] || !BASE || !TOKEN) {
    log('usage: MCP_TEST_URL=... MCP_TEST_TOKEN=... MCP_TEST_HOSTS=... scaleout.mjs ' + Object.keys(commands).join('|') + ' ARGS');
    process.exit(2);
}
try {
    const out = await commands[cmd](...args);
    process.stdout.write(JSON.stringify(out) + '\n');
    log(`scaleout ${cmd}: ${short(out, 3000)}`);
    process.exit(0);
} catch (e) {
    log(`scaleout ${cmd}: FAIL: ${(e && e.stack) || e}`);
    process.exit(1);
}
