// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/lib.mjs - helpers shared by the real-client test scripts.
//
// Each script runs inside a test box (tests/box/box exec ...) as root and talks to the installed
// mcp-exec through `mcp-exec stdio`, exactly as an MCP client configured with
// {"command": "mcp-exec", "args": ["stdio"]} would. Scripts print one line per step to stderr
// ("ok NAME" / "FAIL NAME: why") and exit 0 if every step passed, 1 otherwise, 2 on usage errors.

import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

// The command an MCP client runs; overridable for running the scripts against another build.
export const MCP_EXEC = process.env.MCP_EXEC_CMD || 'mcp-exec';
export const STDIO_ARGS = ['stdio'];
// Scratch directory shared with the shell wrapper (marker files, canaries); in the box.
export const STATE = process.env.MCP_TEST_STATE || '/tmp';

export const LEGACY_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'];
export const LATEST_LEGACY = '2025-11-25';
export const MODERN = '2026-07-28';
export const META_PV = 'io.modelcontextprotocol/protocolVersion';
export const META_CAPS = 'io.modelcontextprotocol/clientCapabilities';
export const META_INFO = 'io.modelcontextprotocol/clientInfo';

export class CheckError extends Error {}

export function check(cond, message, detail) {
    if (!cond) {
        let m = message;
        if (detail !== undefined) m += ': ' + short(detail);
        throw new CheckError(m);
    }
}

export function short(v, max = 1500) {
    let s;
    try {
        s = typeof v === 'string' ? v : JSON.stringify(v);
    } catch {
        s = String(v);
    }
    if (s === undefined) s = String(v);
    return s.length > max ? s.slice(0, max) + '...' : s;
}

export function log(...args) {
    process.stderr.write(args.join(' ') + '\n');
}

export function withTimeout(promise, ms, what) {
    let t;
    const timeout = new Promise((_, reject) => {
        t = setTimeout(() => reject(new CheckError(`${what}: no answer within ${ms} ms`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(t));
}

// A list of named steps; a failing step is reported and the next one still runs, unless it
// was marked fatal (later steps depend on it).
export class Suite {
    constructor(name) {
        this.name = name;
        this.failed = [];
        this.passed = 0;
        this.t0 = Date.now();
    }

    async step(name, fn, { timeoutMs = 60000, fatal = false } = {}) {
        const t = Date.now();
        try {
            await withTimeout(Promise.resolve().then(fn), timeoutMs, name);
            this.passed++;
            log(`${this.name}: ok ${name} (${Date.now() - t} ms)`);
            return true;
        } catch (e) {
            this.failed.push(name);
            const why = e instanceof CheckError ? e.message : (e && e.stack) || String(e);
            log(`${this.name}: FAIL ${name}: ${why}`);
            if (fatal) this.finish();
            return false;
        }
    }

    finish() {
        const s = ((Date.now() - this.t0) / 1000).toFixed(1);
        if (this.failed.length) {
            log(`${this.name}: ${this.failed.length} failed (${this.failed.join(', ')}), ${this.passed} passed, ${s}s`);
            process.exit(1);
        }
        log(`${this.name}: all ${this.passed} steps passed, ${s}s`);
        process.exit(0);
    }
}

// Wraps an SDK transport and records every message both ways, so a test can look at the wire
// (negotiated version, what was sent for a cancellation, replies that must not come).
// Note: the v2 client only probes on a sibling process for the plain StdioClientTransport; with
// this wrapper it probes in place, on the recorded connection.
export class TapTransport {
    constructor(inner) {
        this.inner = inner;
        this.messages = []; // {dir: 'out'|'in', msg, t}
        inner.onmessage = (m, extra) => {
            this.messages.push({ dir: 'in', msg: m, t: Date.now() });
            this.onmessage?.(m, extra);
        };
        inner.onclose = () => this.onclose?.();
        inner.onerror = (e) => this.onerror?.(e);
    }
    start() {
        return this.inner.start();
    }
    send(m, opts) {
        this.messages.push({ dir: 'out', msg: m, t: Date.now() });
        return this.inner.send(m, opts);
    }
    close() {
        return this.inner.close();
    }
    setProtocolVersion(v) {
        this.protocolVersion = v;
        this.inner.setProtocolVersion?.(v);
    }
    get sessionId() {
        return this.inner.sessionId;
    }
    get pid() {
        return this.inner.pid;
    }
    sent(method) {
        return this.messages.filter((m) => m.dir === 'out' && m.msg.method === method).map((m) => m.msg);
    }
    received(pred) {
        return this.messages.filter((m) => m.dir === 'in' && pred(m.msg)).map((m) => m.msg);
    }
    responseTo(id) {
        return this.received((m) => m.id === id && ('result' in m || 'error' in m));
    }
}

// The structured result of an exec call, checked against what every successful call must be.
export function execResult(res, what) {
    check(res && typeof res === 'object', `${what}: no result`, res);
    check(res.isError !== true, `${what}: isError is set`, res);
    const sc = res.structuredContent;
    check(sc && typeof sc === 'object', `${what}: no structuredContent`, res);
    // Spec: a tool returning structured content SHOULD also return it serialized in a text block.
    const text = res.content?.find((c) => c.type === 'text')?.text;
    check(typeof text === 'string', `${what}: no text content block`, res);
    let parsed;
    try {
        parsed = JSON.parse(text);
    } catch {
        check(false, `${what}: the text content is not the serialized structured result`, text);
    }
    check(JSON.stringify(parsed) === JSON.stringify(sc), `${what}: text content and structuredContent differ`, res);
    return sc;
}

export function toolErrorText(res) {
    return (res?.content || [])
        .filter((c) => c.type === 'text')
        .map((c) => c.text)
        .join('\n');
}

// Marker files in STATE for hand-offs with the shell wrapper.
export function mark(name, content = '') {
    writeFileSync(join(STATE, name), content);
}

export async function waitMarker(name, ms, what) {
    const deadline = Date.now() + ms;
    while (!existsSync(join(STATE, name))) {
        if (Date.now() > deadline) throw new CheckError(`${what}: the wrapper did not say "${name}" within ${ms} ms`);
        await sleep(100);
    }
    return readFileSync(join(STATE, name), 'utf8');
}

export function readState(name) {
    return readFileSync(join(STATE, name), 'utf8');
}

// A raw newline-delimited JSON-RPC connection through `mcp-exec stdio`, for what no SDK lets us
// send: chosen protocol versions, batches, requests before initialize, stateless _meta.
export class RawConn {
    constructor(label) {
        this.label = label;
        this.messages = [];
        this.waiters = [];
        this.stderr = '';
        this.buf = '';
        this.closed = false;
        this.child = spawn(MCP_EXEC, STDIO_ARGS, { stdio: ['pipe', 'pipe', 'pipe'] });
        this.child.stdout.setEncoding('utf8');
        this.child.stdout.on('data', (d) => this._data(d));
        this.child.stderr.setEncoding('utf8');
        this.child.stderr.on('data', (d) => (this.stderr += d));
        this.exited = new Promise((resolve) =>
            this.child.on('exit', (code, sig) => {
                this.closed = true;
                this._wake();
                resolve({ code, sig });
            }),
        );
        this.child.stdin.on('error', () => {});
        this.nextId = 1;
    }

    _data(d) {
        this.buf += d;
        let nl;
        while ((nl = this.buf.indexOf('\n')) >= 0) {
            const line = this.buf.slice(0, nl);
            this.buf = this.buf.slice(nl + 1);
            if (!line.trim()) continue;
            let m;
            try {
                m = JSON.parse(line);
            } catch {
                m = { __unparsable: line };
            }
            this.messages.push(m);
        }
        this._wake();
    }

    _wake() {
        const w = this.waiters;
        this.waiters = [];
        for (const f of w) f();
    }

    sendRaw(obj) {
        const line = typeof obj === 'string' ? obj : JSON.stringify(obj);
        check(!line.includes('\n'), 'internal: a message with a newline');
        this.child.stdin.write(line + '\n');
    }

    // Waits until pred matches a received message (searching from index `from`); returns it.
    async waitFor(pred, ms = 15000, what = 'a message') {
        const deadline = Date.now() + ms;
        let i = 0;
        for (;;) {
            for (; i < this.messages.length; i++) if (pred(this.messages[i])) return this.messages[i];
            if (this.closed) throw new CheckError(`${this.label}: connection closed while waiting for ${what}; stderr: ${short(this.stderr)}`);
            if (Date.now() > deadline)
                throw new CheckError(`${this.label}: no ${what} within ${ms} ms; got ${short(this.messages.slice(-5))}`);
            await new Promise((resolve) => {
                this.waiters.push(resolve);
                setTimeout(resolve, 100);
            });
        }
    }

    // Sends a request and returns its response (result or error).
    async request(method, params, { id, ms = 15000 } = {}) {
        const rid = id ?? this.nextId++;
        const msg = { jsonrpc: '2.0', id: rid, method };
        if (params !== undefined) msg.params = params;
        this.sendRaw(msg);
        return this.waitFor(
            (m) => !Array.isArray(m) && m.id === rid && ('result' in m || 'error' in m),
            ms,
            `response to ${method} (id ${JSON.stringify(rid)})`,
        );
    }

    notify(method, params) {
        const msg = { jsonrpc: '2.0', method };
        if (params !== undefined) msg.params = params;
        this.sendRaw(msg);
    }

    async initialize(version, extra = {}) {
        return this.request('initialize', {
            protocolVersion: version,
            capabilities: {},
            clientInfo: { name: 'mcp-exec-raw-test', version: '1.0' },
            ...extra,
        });
    }

    async close() {
        if (!this.closed) {
            this.child.stdin.end();
            const t = setTimeout(() => this.child.kill('SIGTERM'), 5000);
            await this.exited;
            clearTimeout(t);
        }
    }
}

// _meta of a 2026-07-28 request.
export function modernMeta(extra = {}) {
    return {
        [META_PV]: MODERN,
        [META_INFO]: { name: 'mcp-exec-raw-test', version: '1.0' },
        [META_CAPS]: {},
        ...extra,
    };
}
