// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/tasks.mjs - MCP tasks (issue 21) through real clients, in the box
// (tests/integration/transport/test-tasks.sh and test-tasks-long.sh run it):
//
//   node tasks.mjs v1 URL TOK_A TOK_B      v1 SDK 1.32 over Streamable HTTP, the 2025-11-25 core
//                                          format: capabilities, taskSupport, a task's result with
//                                          related-task _meta, invalid arguments make a failed
//                                          task, cancelTask mid-run (the run unit goes), a second
//                                          cancel is -32602 and deletes the ended task, a guessed
//                                          id is -32602, listTasks shows only
//                                          the caller's own, another token's client gets -32602
//   node tasks.mjs long URL TOKEN FIG      a 65 s run (longer than the SDK's 60 s request timeout)
//                                          through callToolStream completes with its stdout and,
//                                          with FIG=1, its matplotlib figure as an image block
//   node tasks.mjs reconnect URL TOK_A TOK_B
//                                          a task outlives its MCP session (DELETEd): a new
//                                          session of the same token gets, lists and fetches
//                                          it; another token's gets -32602
//   node tasks.mjs v2 URL TOKEN            @modelcontextprotocol/client 2.4 with ext-tasks 0.2.2:
//                                          createTaskSessionFromClient in the legacy era (the core
//                                          format) and in the 2026-07-28 era (the extension, with
//                                          a rawDispatch of our own), callTool with
//                                          preference 'prefer', settle()
//   node tasks.mjs modern URL TOK_A TOK_B  raw 2026-07-28 HTTP (fetch): slow call with the
//                                          extension is a task, quick one inline, slow one
//                                          without the extension inline; tasks/get (result
//                                          inline), Mcp-Name mismatch 400, tasks/update -32602,
//                                          tasks/cancel an empty ack and the run unit goes;
//                                          subscriptions/listen acknowledges only own ids and
//                                          sends notifications/tasks with the result
//   node tasks.mjs stdio                   v1 SDK over `mcp-exec stdio`: a task and its result,
//                                          listTasks, and a new connection (same uid) fetching a
//                                          task of a closed one
//   node tasks.mjs start URL TOKEN N       N tasks sleeping 60 s; their ids to $MCP_TEST_STATE/ids
//   node tasks.mjs gone URL TOKEN          each id in $MCP_TEST_STATE/ids is -32602 for tasks/get
//   node tasks.mjs caps URL TOK_A TOK_B N  with MCP_EXEC_MAX_TASKS_PER_CALLER=N, N finished tasks
//                                          held: the next task call deletes the oldest of them;
//                                          N running: the next is -32600 "too many tasks";
//                                          TOK_B's task still works
//   node tasks.mjs budget URL TOK_A TOK_B  finished, unread results of 500 kB fill TOK_A's share
//                                          of the front end's budget: a further task call gets
//                                          "server busy"; TOK_B's task still works
//
// The run units are looked at with systemctl (the scripts run in the box as root), with the
// filter of tests/lib/itest.sh's active_run_units and run_units.

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MCP_EXEC, META_CAPS, MODERN, STATE, STDIO_ARGS, Suite, check, execResult, log, modernMeta, short } from './lib.mjs';

const [part, ...rest] = process.argv.slice(2);
const suite = new Suite(`tasks ${part}`);
const ID_RE = /^[a-z0-9-]+\.[0-9a-f]{32}$/;
const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const RELATED = 'io.modelcontextprotocol/related-task';
const NO_SUCH = /no such task/;

// ---- helpers ----------------------------------------------------------------------------------

function sh(cmd, args) {
    return new Promise((resolve) => {
        execFile(cmd, args, { timeout: 30000 }, (err, stdout) => resolve(String(stdout)));
    });
}

// The clients' run units (tests/lib/itest.sh: active_run_units, run_units), without the broker's
// own runs and idle warm units.
const OWN = /mcp-exec sandbox self-check|mcp-exec module discovery|mcp-exec warm unit \((idle|starting)\)/;
async function runUnits(active) {
    const out = await sh('systemctl', ['list-units', ...(active ? ['--state=active'] : ['--all']), 'mcp-exec-run-*',
        '--plain', '--no-legend', '--no-pager']);
    return out.split('\n').filter((l) => l.trim().startsWith('mcp-exec-run-') && !OWN.test(l)).map((l) => l.trim().split(/\s+/)[0]);
}

async function waitUnits(what, pred, ms) {
    const deadline = Date.now() + ms;
    for (;;) {
        const u = await runUnits(pred === 'active');
        if (pred === 'active' ? u.length > 0 : u.length === 0) return u;
        check(Date.now() < deadline, `${what}: ${pred === 'active' ? 'no active run unit' : 'run units left'} after ${ms} ms`, u);
        await sleep(200);
    }
}

// A promise that must reject with a JSON-RPC error of that code (and message).
async function rpcError(p, code, re, what) {
    let r, e;
    try {
        r = await p;
    } catch (err) {
        e = err;
    }
    check(e, `${what}: succeeded, want error ${code}`, r);
    check(e.code === code, `${what}: error code ${e.code}, want ${code}`, e.message);
    if (re) check(re.test(e.message), `${what}: error message`, e.message);
    return e;
}

function checkTask(t, what, status) {
    check(t && ID_RE.test(t.taskId), `${what}: task id`, t);
    if (status) check(t.status === status, `${what}: status ${t.status}, want ${status}`, t);
    check(typeof t.createdAt === 'string' && typeof t.lastUpdatedAt === 'string', `${what}: timestamps`, t);
}

async function v1Http(base, token, name = 'mcp-exec-tasks') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const transport = new StreamableHTTPClientTransport(new URL(base + '/mcp'), { requestInit: { headers: { 'X-MCP-AUTH': token } } });
    const client = new Client({ name, version: '1.0.0' });
    await client.connect(transport);
    // tools/list first: the SDK learns taskSupport and the outputSchema from it.
    await client.listTools();
    return { client, transport, tasks: client.experimental.tasks };
}

async function v1Stdio() {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const transport = new StdioClientTransport({ command: MCP_EXEC, args: STDIO_ARGS, stderr: 'inherit' });
    const client = new Client({ name: 'mcp-exec-tasks-stdio', version: '1.0.0' });
    await client.connect(transport);
    await client.listTools();
    return { client, transport, tasks: client.experimental.tasks };
}

let schemas;
async function sdkTypes() {
    schemas ??= await import('@modelcontextprotocol/sdk/types.js');
    return schemas;
}

// callToolStream to its end: {created, statuses, result, error}.
async function stream(c, args, ttl = 600000, opts = {}) {
    const { CallToolResultSchema } = await sdkTypes();
    const out = { statuses: [] };
    for await (const m of c.tasks.callToolStream({ name: 'exec', arguments: args }, CallToolResultSchema, { task: { ttl }, ...opts })) {
        if (m.type === 'taskCreated') {
            out.created = m.task;
            opts.onCreated?.(m.task);
        } else if (m.type === 'taskStatus') out.statuses.push(m.task.status);
        else if (m.type === 'result') out.result = m.result;
        else if (m.type === 'error') out.error = m.error;
    }
    return out;
}

// A task created with a plain tools/call request (no polling): its Task.
async function create(c, args, ttl = 600000, status = 'working') {
    const { CreateTaskResultSchema } = await sdkTypes();
    const r = await c.client.request({ method: 'tools/call', params: { name: 'exec', arguments: args, task: { ttl } } },
        CreateTaskResultSchema);
    checkTask(r.task, 'created', status);
    return r.task;
}

async function waitStatus(c, id, want, ms = 30000) {
    const deadline = Date.now() + ms;
    for (;;) {
        const t = await c.tasks.getTask(id);
        if (t.status === want) return t;
        check(t.status === 'working', `task ${id}: status ${t.status}, want ${want}`, t);
        check(Date.now() < deadline, `task ${id}: still ${t.status} after ${ms} ms`, t);
        await sleep(300);
    }
}

function guessFrom(id) {
    return id.split('.')[0] + '.' + randomBytes(16).toString('hex');
}

const closeQuietly = (c) => c?.client.close().catch(() => {});

// ---- v1: the SDK over Streamable HTTP, the core format -----------------------------------------

async function v1(base, tokA, tokB) {
    let a, b;
    await suite.step('connect (token A)', async () => {
        a = await v1Http(base, tokA);
    }, { fatal: true, timeoutMs: 20000 });

    await suite.step('2025-11-25 with the tasks capability and exec taskSupport optional', async () => {
        const v = a.transport.protocolVersion;
        check(v === '2025-11-25', `negotiated ${v}`);
        const caps = a.client.getServerCapabilities()?.tasks;
        check(caps && caps.cancel && caps.list && caps.requests?.tools?.call, 'capabilities.tasks (list with a token)', caps);
        const { tools } = await a.client.listTools();
        const by = Object.fromEntries(tools.map((t) => [t.name, t]));
        check(by.exec?.execution?.taskSupport === 'optional', 'exec execution.taskSupport', by.exec?.execution);
        for (const n of ['session_create', 'session_close'])
            check(!by[n] || by[n].execution === undefined, `${n} has an execution`, by[n]);
    });

    const mine = [];
    await suite.step('callToolStream: a task and its result with related-task _meta', async () => {
        const s = await stream(a, { code: 'import time; time.sleep(1.5); print("task", 6*7)' });
        check(!s.error, 'the stream ended in an error', s.error?.message);
        checkTask(s.created, 'taskCreated', 'working');
        check(Number.isInteger(s.created.ttl) && s.created.ttl >= 60000, 'ttl', s.created);
        check(s.created.pollInterval === 1000, 'pollInterval', s.created);
        mine.push(s.created.taskId);
        const sc = execResult(s.result, 'task result');
        check(sc.stdout === 'task 42\n' && sc.exit_code === 0, 'stdout', sc);
        check(s.result._meta?.[RELATED]?.taskId === s.created.taskId, 'no related-task _meta', s.result._meta);
        check(s.statuses.at(-1) === 'completed', 'the last status', s.statuses);
        const t = await a.tasks.getTask(s.created.taskId);
        checkTask(t, 'getTask after', 'completed');
    }, { timeoutMs: 40000 });

    await suite.step('invalid arguments make a task that failed, statusMessage says why', async () => {
        // It fails at once: the handle may say so already.
        const t = await create(a, { code: '' }, 600000, null);
        mine.push(t.taskId);
        check(['working', 'failed'].includes(t.status), 'the handle\'s status', t);
        const f = await waitStatus(a, t.taskId, 'failed', 10000);
        check(/empty/.test(f.statusMessage), 'statusMessage', f);
        check(typeof f.statusMessage === 'string' && f.statusMessage.length > 0, 'statusMessage', f);
        const r = await a.tasks.getTaskResult(t.taskId, (await sdkTypes()).CallToolResultSchema);
        check(r.isError === true && r._meta?.[RELATED]?.taskId === t.taskId, 'tasks/result of a failed task', r);
    });

    await suite.step('cancelTask mid-run: cancelled, the run unit goes; again is -32602 and deletes it', async () => {
        const t = await create(a, { code: 'import time\nprint("up", flush=True)\ntime.sleep(60)\nprint("woke")', timeout_s: 120 });
        mine.push(t.taskId);
        await waitUnits('before the cancel', 'active', 30000);
        const c = await a.tasks.cancelTask(t.taskId);
        checkTask(c, 'cancelTask', 'cancelled');
        check(c.taskId === t.taskId, 'cancelTask answered for another task', c);
        const g = await a.tasks.getTask(t.taskId);
        check(g.status === 'cancelled', 'getTask after the cancel', g);
        await waitUnits('after the cancel', 'none', 15000);
        await rpcError(a.tasks.getTaskResult(t.taskId, (await sdkTypes()).CallToolResultSchema), -32602, null,
            'tasks/result of a cancelled task');
        // Cancelling one that ended is refused (-32602) and deletes it: its caller is done with it.
        await rpcError(a.tasks.cancelTask(t.taskId), -32602, /deleted/, 'a second cancelTask');
        await rpcError(a.tasks.getTask(t.taskId), -32602, NO_SUCH, 'getTask after the second cancel');
        mine.pop();
    }, { timeoutMs: 60000 });

    await suite.step('a guessed id is -32602 for getTask, getTaskResult and cancelTask', async () => {
        const g = guessFrom(mine[0]);
        await rpcError(a.tasks.getTask(g), -32602, NO_SUCH, 'getTask(guess)');
        await rpcError(a.tasks.getTaskResult(g, (await sdkTypes()).CallToolResultSchema), -32602, NO_SUCH, 'getTaskResult(guess)');
        await rpcError(a.tasks.cancelTask(g), -32602, NO_SUCH, 'cancelTask(guess)');
        await rpcError(a.tasks.getTask('not-a-task-id'), -32602, NO_SUCH, 'getTask(malformed)');
    });

    let theirs;
    await suite.step('another token: its own task; A\'s ids are -32602 to it', async () => {
        b = await v1Http(base, tokB, 'mcp-exec-tasks-b');
        const s = await stream(b, { code: 'print("bob")' });
        check(execResult(s.result, 'B result').stdout === 'bob\n', 'B stdout', s.result);
        theirs = s.created.taskId;
        for (const id of mine) {
            await rpcError(b.tasks.getTask(id), -32602, NO_SUCH, `B getTask(A's ${id})`);
            await rpcError(b.tasks.getTaskResult(id, (await sdkTypes()).CallToolResultSchema), -32602, NO_SUCH, `B getTaskResult(A's)`);
        }
        await rpcError(b.tasks.cancelTask(mine[0]), -32602, NO_SUCH, "B cancelTask(A's)");
        await rpcError(a.tasks.getTask(theirs), -32602, NO_SUCH, "A getTask(B's)");
    }, { timeoutMs: 30000 });

    await suite.step('listTasks shows only the caller\'s own, oldest first', async () => {
        const la = await a.tasks.listTasks();
        const ids = la.tasks.map((t) => t.taskId);
        check(JSON.stringify(ids) === JSON.stringify(mine), 'A\'s list is not exactly A\'s tasks in order', { ids, mine });
        check(la.nextCursor === undefined, 'a cursor for a short list', la);
        const lb = await b.tasks.listTasks();
        check(JSON.stringify(lb.tasks.map((t) => t.taskId)) === JSON.stringify([theirs]), 'B\'s list', lb);
    });

    await closeQuietly(a);
    await closeQuietly(b);
    suite.finish();
}

// ---- long: longer than the SDK's default request timeout --------------------------------------

async function long(base, token, fig) {
    let a;
    await suite.step('connect', async () => {
        a = await v1Http(base, token);
    }, { fatal: true, timeoutMs: 20000 });
    await suite.step('a 65 s run through callToolStream (the SDK\'s request timeout is 60 s)', async () => {
        const plot = fig === '1' ? '\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()' : '';
        const code = `import time\nprint("start", flush=True)\ntime.sleep(65)\nprint("done")${plot}`;
        const t0 = Date.now();
        const s = await stream(a, { code, timeout_s: 120 });
        log(`  ${s.statuses.length} polls, ${Date.now() - t0} ms`);
        check(!s.error, 'the stream ended in an error', s.error?.message);
        checkTask(s.created, 'taskCreated', 'working');
        check(s.statuses.filter((x) => x === 'working').length >= 2, 'the SDK did not poll a working task', s.statuses);
        const sc = execResult(s.result, '65 s');
        check(sc.stdout === 'start\ndone\n' && sc.exit_code === 0 && sc.timed_out === false, 'result', sc);
        if (fig === '1') {
            const img = (s.result.content || []).filter((b) => b.type === 'image');
            check(img.length === 1 && img[0].mimeType === 'image/png', 'no PNG image block', s.result.content?.map((b) => b.type));
            check(Buffer.from(img[0].data, 'base64').subarray(1, 4).toString() === 'PNG', 'the image is no PNG');
            check(sc.images?.length === 1 && sc.images[0].returned === true, 'structuredContent.images', sc.images);
        }
    }, { timeoutMs: 150000 });
    await closeQuietly(a);
    suite.finish();
}

// ---- reconnect: a task outlives its MCP session -----------------------------------------------

async function reconnect(base, tokA, tokB) {
    let id;
    await suite.step('create a task, end the MCP session (DELETE) and close', async () => {
        const a = await v1Http(base, tokA);
        id = (await create(a, { code: 'import time\ntime.sleep(2)\nprint("after the reconnect")', timeout_s: 60 })).taskId;
        await a.transport.terminateSession();
        await a.client.close();
    }, { fatal: true, timeoutMs: 20000 });

    await suite.step('a new MCP session of the same token gets, lists and fetches it', async () => {
        const a2 = await v1Http(base, tokA);
        const t = await a2.tasks.getTask(id);
        checkTask(t, 'getTask', undefined);
        check(['working', 'completed'].includes(t.status), 'status', t);
        check((await a2.tasks.listTasks()).tasks.some((x) => x.taskId === id), 'not in the new session\'s listTasks');
        const r = await a2.tasks.getTaskResult(id, (await sdkTypes()).CallToolResultSchema);
        check(execResult(r, 'result').stdout === 'after the reconnect\n', 'stdout', r);
        check(r._meta?.[RELATED]?.taskId === id, 'related-task', r._meta);
        check((await a2.tasks.getTask(id)).status === 'completed', 'not completed after its result');
        await closeQuietly(a2);
    }, { timeoutMs: 30000 });

    await suite.step('another token\'s client gets -32602 for it', async () => {
        const b = await v1Http(base, tokB, 'mcp-exec-tasks-b');
        await rpcError(b.tasks.getTask(id), -32602, NO_SUCH, 'B getTask');
        await rpcError(b.tasks.getTaskResult(id, (await sdkTypes()).CallToolResultSchema), -32602, NO_SUCH, 'B getTaskResult');
        await rpcError(b.tasks.cancelTask(id), -32602, NO_SUCH, 'B cancelTask');
        check(!(await b.tasks.listTasks()).tasks.some((x) => x.taskId === id), 'in another token\'s listTasks');
        await closeQuietly(b);
    });
    suite.finish();
}

// ---- raw 2026-07-28 over HTTP -----------------------------------------------------------------

let rawId = 1;
// One POST of a 2026-07-28 request; the headers mirror the body unless overridden. Returns
// {status, msg} (msg: the JSON-RPC response, from JSON or the SSE stream).
async function post(base, token, method, params, { name, ext = true, headers = {}, signal } = {}) {
    const caps = ext ? { extensions: { [TASKS_EXT]: {} } } : {};
    const body = { jsonrpc: '2.0', id: rawId++, method, params: { ...params, _meta: { ...modernMeta({ [META_CAPS]: caps }), ...(params._meta || {}) } } };
    const h = {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': MODERN,
        'Mcp-Method': method,
        'X-MCP-AUTH': token,
        ...(name !== undefined ? { 'Mcp-Name': name } : {}),
        ...headers,
    };
    for (const k of Object.keys(h)) if (h[k] === undefined) delete h[k];
    const r = await fetch(base + '/mcp', { method: 'POST', headers: h, body: JSON.stringify(body), signal });
    const text = await r.text();
    let msg;
    if ((r.headers.get('content-type') || '').startsWith('text/event-stream')) {
        for (const line of text.split('\n'))
            if (line.startsWith('data:')) {
                const m = JSON.parse(line.slice(5));
                if (m.id === body.id) msg = m;
            }
    } else if (text) {
        try {
            msg = JSON.parse(text);
        } catch {
            msg = { __text: text };
        }
    }
    return { status: r.status, msg };
}

const rawCall = (base, token, code, ext = true) => post(base, token, 'tools/call', { name: 'exec', arguments: { code, timeout_s: 60 } }, { name: 'exec', ext });
const rawTask = (base, token, method, id, extra = {}, opts = {}) => post(base, token, method, { taskId: id, ...extra }, { name: id, ...opts });

async function rawWaitDone(base, token, id, ms = 30000) {
    const deadline = Date.now() + ms;
    for (;;) {
        const g = await rawTask(base, token, 'tasks/get', id);
        check(g.status === 200 && g.msg?.result, 'tasks/get', g);
        if (g.msg.result.status !== 'working') return g.msg.result;
        check(Date.now() < deadline, `task still working after ${ms} ms`, g.msg);
        await sleep(300);
    }
}

// subscriptions/listen for ids: the SSE stream's messages until done(messages) or ms; then the
// client closes the stream (it stays open until then).
async function listen(base, token, taskIds, done, ms = 20000) {
    const id = rawId++;
    const body = { jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications: { taskIds }, _meta: modernMeta({ [META_CAPS]: { extensions: { [TASKS_EXT]: {} } } }) } };
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), ms);
    const msgs = [];
    try {
        const r = await fetch(base + '/mcp', {
            method: 'POST', signal: ac.signal, body: JSON.stringify(body),
            headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': MODERN,
                'Mcp-Method': 'subscriptions/listen', 'X-MCP-AUTH': token },
        });
        check(r.status === 200 && (r.headers.get('content-type') || '').startsWith('text/event-stream'), 'subscriptions/listen is no SSE stream',
            { status: r.status, type: r.headers.get('content-type'), body: r.status !== 200 ? await r.text() : undefined });
        const dec = new TextDecoder();
        let buf = '';
        for await (const chunk of r.body) {
            buf += dec.decode(chunk, { stream: true });
            let i;
            while ((i = buf.indexOf('\n\n')) >= 0) {
                const ev = buf.slice(0, i);
                buf = buf.slice(i + 2);
                const data = ev.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5)).join('\n');
                if (data.trim()) msgs.push(JSON.parse(data));
            }
            if (done(msgs)) break;
        }
    } catch (e) {
        if (!ac.signal.aborted) throw e;
    } finally {
        clearTimeout(timer);
        ac.abort();
    }
    return { id, msgs };
}

async function modern(base, tokA, tokB) {
    await suite.step('server/discover lists the tasks extension', async () => {
        const d = await post(base, tokA, 'server/discover', {});
        check(d.status === 200 && d.msg?.result, 'server/discover', d);
        const ext = d.msg.result.capabilities?.extensions?.[TASKS_EXT];
        check(ext && typeof ext === 'object' && Object.keys(ext).length === 0, 'capabilities.extensions', d.msg.result.capabilities);
    });

    let id;
    await suite.step('a slow call with the extension becomes resultType task', async () => {
        const r = await rawCall(base, tokA, 'import time\ntime.sleep(3)\nprint("slow")');
        check(r.status === 200 && r.msg?.result, 'tools/call', r);
        const t = r.msg.result;
        check(t.resultType === 'task' && t.status === 'working' && ID_RE.test(t.taskId), 'not a task handle', t);
        check(Number.isInteger(t.ttlMs) && t.ttlMs >= 60000 && typeof t.createdAt === 'string' && typeof t.lastUpdatedAt === 'string',
            'handle fields', t);
        check(t.pollIntervalMs === undefined || Number.isInteger(t.pollIntervalMs), 'pollIntervalMs', t);
        check(!('result' in t) && !('content' in t), 'a handle with a result', t);
        id = t.taskId;
    }, { fatal: true, timeoutMs: 30000 });

    await suite.step('Mcp-Name mismatch or missing is 400; another token is -32602', async () => {
        const wrong = await rawTask(base, tokA, 'tasks/get', id, {}, { name: guessFrom(id) });
        check(wrong.status === 400 && wrong.msg?.error?.code === -32020, 'a wrong Mcp-Name', wrong);
        const none = await rawTask(base, tokA, 'tasks/get', id, {}, { headers: { 'Mcp-Name': undefined } });
        check(none.status === 400 && none.msg?.error?.code === -32020, 'no Mcp-Name', none);
        const other = await rawTask(base, tokB, 'tasks/get', id);
        check(other.msg?.error?.code === -32602 && NO_SUCH.test(other.msg.error.message), 'another token\'s tasks/get', other);
    });

    await suite.step('tasks/get returns the result inline once completed', async () => {
        const t = await rawWaitDone(base, tokA, id);
        check(t.resultType === 'complete' && t.taskId === id && t.status === 'completed', 'tasks/get', t);
        check(t.result?.structuredContent?.stdout === 'slow\n' && t.result.isError === false, 'the result inline', t);
        check(!('error' in t), 'an error next to a result', t);
    }, { timeoutMs: 30000 });

    await suite.step('tasks/update is -32602', async () => {
        const u = await rawTask(base, tokA, 'tasks/update', id, { inputResponses: {} });
        check(u.msg?.error?.code === -32602, 'tasks/update', u);
    });

    await suite.step('a quick call with the extension answers inline', async () => {
        const r = await rawCall(base, tokA, 'print("quick")');
        check(r.msg?.result?.resultType === 'complete' && r.msg.result.structuredContent?.stdout === 'quick\n', 'inline', r);
    }, { timeoutMs: 30000 });

    await suite.step('the slow call without the extension answers inline', async () => {
        const r = await rawCall(base, tokA, 'import time\ntime.sleep(3)\nprint("slow inline")', false);
        check(r.msg?.result?.resultType === 'complete' && r.msg.result.structuredContent?.stdout === 'slow inline\n', 'inline', r);
    }, { timeoutMs: 30000 });

    await suite.step('tasks/cancel: an empty ack, cancelled, the run unit goes', async () => {
        const r = await rawCall(base, tokA, 'import time\nprint("up", flush=True)\ntime.sleep(60)');
        check(r.msg?.result?.resultType === 'task', 'not a task', r);
        const cid = r.msg.result.taskId;
        await waitUnits('before the cancel', 'active', 30000);
        const c = await rawTask(base, tokA, 'tasks/cancel', cid);
        check(c.status === 200 && c.msg?.result?.resultType === 'complete', 'tasks/cancel', c);
        const keys = Object.keys(c.msg.result).filter((k) => k !== '_meta');
        check(keys.length === 1, 'tasks/cancel is not an empty ack', c.msg.result);
        await waitUnits('after the cancel', 'none', 15000);
        const g = await rawTask(base, tokA, 'tasks/get', cid);
        check(g.msg?.result?.status === 'cancelled' && !('result' in g.msg.result), 'tasks/get after the cancel', g);
    }, { timeoutMs: 60000 });

    await suite.step('subscriptions/listen: acknowledged with only own ids, then notifications/tasks', async () => {
        const r = await rawCall(base, tokA, 'import time\ntime.sleep(2)\nprint("heard")');
        check(r.msg?.result?.resultType === 'task', 'not a task', r);
        const tid = r.msg.result.taskId;
        // Another token's subscription to it is acknowledged without it.
        const other = await listen(base, tokB, [tid], (m) => m.length >= 1, 10000);
        check(other.msgs[0]?.method === 'notifications/subscriptions/acknowledged' &&
            JSON.stringify(other.msgs[0].params?.notifications?.taskIds) === '[]', 'another token\'s acknowledgement', other.msgs);
        const ended = (m) => m.method === 'notifications/tasks' && m.params?.taskId === tid && m.params.status !== 'working';
        const { id, msgs } = await listen(base, tokA, [tid, guessFrom(tid)], (ms) => ms.some(ended), 20000);
        const ack = msgs[0];
        check(ack?.method === 'notifications/subscriptions/acknowledged', 'the first message', msgs);
        check(JSON.stringify(ack.params?.notifications?.taskIds) === JSON.stringify([tid]), 'acknowledged ids', ack);
        check(ack.params?._meta?.['io.modelcontextprotocol/subscriptionId'] === id, 'subscriptionId', ack);
        const n = msgs.find(ended);
        check(n, 'no notifications/tasks for the task\'s end', msgs);
        check(n.params.status === 'completed' && n.params.result?.structuredContent?.stdout === 'heard\n', 'the notification', n);
        check(n.params._meta?.['io.modelcontextprotocol/subscriptionId'] === id, 'the notification\'s subscriptionId', n);
    }, { timeoutMs: 40000 });

    await suite.step('an unknown id is -32602 for tasks/get and tasks/cancel', async () => {
        const g = guessFrom(id);
        for (const m of ['tasks/get', 'tasks/cancel']) {
            const r = await rawTask(base, tokA, m, g);
            check(r.msg?.error?.code === -32602 && NO_SUCH.test(r.msg.error.message), m, r);
        }
    });
    suite.finish();
}

// ---- v2: @modelcontextprotocol/client with ext-tasks ------------------------------------------

async function v2(base, token) {
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const { createTaskSessionFromClient, resultFromTaskOutcome } = await import('@modelcontextprotocol/ext-tasks/client');
    const SLOW = 'import time\nprint("v2", flush=True)\ntime.sleep(7)\nprint("done")';
    const connect = async (mode) => {
        const wire = [];
        const recFetch = (url, init = {}) => {
            if (init.body) wire.push(JSON.parse(init.body));
            return fetch(url, init);
        };
        const transport = new StreamableHTTPClientTransport(new URL(base + '/mcp'), {
            requestInit: { headers: { 'X-MCP-AUTH': token } }, fetch: recFetch,
        });
        const client = new Client({ name: 'mcp-exec-tasks-v2', version: '1.0.0' }, mode ? { versionNegotiation: { mode } } : undefined);
        await client.connect(transport);
        return { client, wire };
    };
    // The outcome's result, or a failure that says why (a schema's complaint is in the cause).
    const settled = async (ex, what) => {
        const { outcome } = await ex.settle();
        if (outcome.status !== 'completed') {
            const e = outcome.error;
            const issues = e?.cause?.cause?.issues ?? e?.cause?.issues;
            check(false, `${what}: the execution ${outcome.status}: ${e?.message}`, { issues, task: outcome.task });
        }
        return resultFromTaskOutcome(outcome);
    };
    // The run takes 7 s and every request may take 4: only a task gets it through.
    const callOpts = { task: { preference: 'prefer' }, requestTimeoutMs: 4000 };

    await suite.step('legacy era: ext-tasks speaks the 2025-11-25 core format', async () => {
        const { client, wire } = await connect();
        check(client.getNegotiatedProtocolVersion() === '2025-11-25', 'version', client.getNegotiatedProtocolVersion());
        const session = createTaskSessionFromClient(client, { endpointId: 'mcp-exec-legacy' });
        try {
            const ex = await session.callTool('exec', { code: SLOW, timeout_s: 60 }, callOpts);
            check(ex.kind === 'task' && ID_RE.test(ex.handle?.taskId), 'not a task execution', { kind: ex.kind, handle: ex.handle });
            const res = await settled(ex, 'legacy');
            check(execResult(res, 'legacy').stdout === 'v2\ndone\n', 'stdout', res);
            const call = wire.find((m) => m.method === 'tools/call');
            check(call?.params?.task && typeof call.params.task === 'object', 'tools/call without params.task', call);
            check(wire.some((m) => m.method === 'tasks/get') && wire.some((m) => m.method === 'tasks/result'), 'no tasks/get or tasks/result',
                wire.map((m) => m.method));
        } finally {
            await session.close();
            await client.close();
        }
    }, { timeoutMs: 40000 });

    await suite.step('2026-07-28 era: ext-tasks speaks the extension (rawDispatch of our own)', async () => {
        const { client } = await connect('auto');
        check(client.getNegotiatedProtocolVersion() === MODERN, 'version', client.getNegotiatedProtocolVersion());
        const sent = [];
        // The host's request coordinator: the framed request as it is, Mcp-Name from the library.
        const rawDispatch = async (request, options = {}) => {
            sent.push(request);
            const hdr = options.context?.headers?.['Mcp-Name'];
            const name = hdr ?? (request.method === 'tools/call' ? request.params.name : undefined);
            const { msg } = await post(base, token, request.method, request.params, { name, ext: false, signal: options.signal });
            check(msg && ('result' in msg || 'error' in msg), `rawDispatch ${request.method}: no response`, msg);
            return 'error' in msg ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result };
        };
        const session = createTaskSessionFromClient(client, {
            endpointId: 'mcp-exec-modern',
            rawDispatch,
            v2RequestFraming: { protocolVersion: MODERN, clientInfo: { name: 'mcp-exec-tasks-v2', version: '1.0.0' }, clientCapabilities: {} },
        });
        try {
            const ex = await session.callTool('exec', { code: SLOW, timeout_s: 60 }, callOpts);
            check(ex.kind === 'task' && ID_RE.test(ex.handle?.taskId), 'not a task execution', { kind: ex.kind, handle: ex.handle });
            const res = await settled(ex, 'modern');
            check(execResult(res, 'modern').stdout === 'v2\ndone\n', 'stdout', res);
            const call = sent.find((m) => m.method === 'tools/call');
            check(call?.params?._meta?.[META_CAPS]?.extensions?.[TASKS_EXT] && !call.params.task, 'tools/call framing', call);
            check(sent.some((m) => m.method === 'tasks/get'), 'no tasks/get', sent.map((m) => m.method));
            log(`  wire: ${sent.map((m) => m.method).join(', ')}`);
        } finally {
            await session.close();
            await client.close();
        }
    }, { timeoutMs: 40000 });
    suite.finish();
}

// ---- stdio ------------------------------------------------------------------------------------

async function stdio() {
    let id;
    await suite.step('a task through `mcp-exec stdio` and its result', async () => {
        const c = await v1Stdio();
        check(c.client.getServerCapabilities()?.tasks?.list, 'no tasks.list over stdio', c.client.getServerCapabilities());
        const s = await stream(c, { code: 'import time; time.sleep(1); print("stdio task")' });
        check(!s.error, 'error', s.error?.message);
        checkTask(s.created, 'taskCreated', 'working');
        check(execResult(s.result, 'stdio').stdout === 'stdio task\n', 'stdout', s.result);
        check(s.result._meta?.[RELATED]?.taskId === s.created.taskId, 'related-task', s.result._meta);
        check((await c.tasks.listTasks()).tasks.some((t) => t.taskId === s.created.taskId), 'not in listTasks');
        id = (await create(c, { code: 'import time\ntime.sleep(2)\nprint("next connection")', timeout_s: 60 })).taskId;
        await c.client.close();
    }, { fatal: true, timeoutMs: 30000 });
    await suite.step('a new connection of the same uid fetches the closed one\'s task', async () => {
        const c = await v1Stdio();
        const r = await c.tasks.getTaskResult(id, (await sdkTypes()).CallToolResultSchema);
        check(execResult(r, 'stdio 2').stdout === 'next connection\n', 'stdout', r);
        await c.client.close();
    }, { timeoutMs: 30000 });
    suite.finish();
}

// ---- the front end dies: start, gone ----------------------------------------------------------

async function start(base, token, n) {
    const ids = [];
    await suite.step(`${n} tasks sleeping 60 s`, async () => {
        const c = await v1Http(base, token);
        for (let i = 0; i < Number(n); i++)
            ids.push((await create(c, { code: 'import time\nprint("up", flush=True)\ntime.sleep(60)', timeout_s: 120 })).taskId);
        writeFileSync(join(STATE, 'ids'), ids.join('\n') + '\n');
        await closeQuietly(c);
    }, { fatal: true, timeoutMs: 30000 });
    suite.finish();
}

async function gone(base, token) {
    const ids = readFileSync(join(STATE, 'ids'), 'utf8').split('\n').filter(Boolean);
    await suite.step('the old ids are -32602 after the front end died', async () => {
        const c = await v1Http(base, token);
        for (const id of ids) await rpcError(c.tasks.getTask(id), -32602, NO_SUCH, `getTask(${id})`);
        await closeQuietly(c);
    }, { timeoutMs: 30000 });
    suite.finish();
}

// ---- budget: unread results fill one caller's share -------------------------------------------

async function budget(base, tokA, tokB) {
    let a;
    await suite.step('connect', async () => {
        a = await v1Http(base, tokA);
    }, { fatal: true });
    // Large enough that the share fills before the count cap (where the oldest would go).
    const BIG = 'import sys\nsys.stdout.write("x" * 500000)';
    let refused, made = 0;
    await suite.step('results of 500 kB left unread until a task call is refused', async () => {
        // The refusal is either the task call's error (no room for the task) or the task failed
        // at once with the tool's "server busy" (no room for its call).
        for (let i = 0; i < 30 && !refused; i++) {
            let t;
            try {
                t = await create(a, { code: BIG, timeout_s: 60 }, 600000, null);
            } catch (e) {
                refused = { how: 'error', code: e.code, message: e.message };
                break;
            }
            let d = await a.tasks.getTask(t.taskId);
            const deadline = Date.now() + 30000;
            while (d.status === 'working' && Date.now() < deadline) {
                await sleep(300);
                d = await a.tasks.getTask(t.taskId);
            }
            if (d.status === 'failed') refused = { how: 'failed task', message: d.statusMessage };
            else {
                check(d.status === 'completed', `task ${i}`, d);
                made++;
            }
        }
        log(`  ${made} results of 500 kB held; then ${short(refused)}`);
        check(refused, `${made} tasks of 500 kB unread and no refusal`);
        check(/^server busy/.test(refused.message), 'the refusal does not say server busy', refused);
        if (refused.how === 'error')
            check(refused.code === -32600 || refused.code === 400, 'the refusal\'s code', refused);
        check(made >= 2, 'refused before any result was held', made);
    }, { timeoutMs: 120000 });
    await suite.step('another token still gets its task done', async () => {
        const b = await v1Http(base, tokB, 'mcp-exec-tasks-b');
        const s = await stream(b, { code: 'print("b works")' });
        check(!s.error, 'B\'s task', s.error?.message);
        check(execResult(s.result, 'B').stdout === 'b works\n', 'B stdout', s.result);
        await closeQuietly(b);
    }, { timeoutMs: 30000 });
    await closeQuietly(a);
    suite.finish();
}

// ---- caps: MCP_EXEC_MAX_TASKS_PER_CALLER=N -----------------------------------------------------

async function caps(base, tokA, tokB, n) {
    let a;
    await suite.step('connect', async () => {
        a = await v1Http(base, tokA);
    }, { fatal: true });
    await suite.step(`${n} finished tasks held: the next task call deletes the oldest`, async () => {
        const done = [];
        for (let i = 0; i < Number(n); i++) {
            const t = await create(a, { code: `print(${i})` });
            await waitStatus(a, t.taskId, 'completed', 20000);
            done.push(t.taskId);
        }
        const t = await create(a, { code: 'import time\ntime.sleep(60)', timeout_s: 120 });
        const ids = (await a.tasks.listTasks()).tasks.map((x) => x.taskId);
        check(ids.length === Number(n) && !ids.includes(done[0]) && ids.includes(t.taskId),
            'the oldest finished task did not make room', { ids, done });
        await rpcError(a.tasks.getTask(done[0]), -32602, NO_SUCH, 'getTask of the oldest finished task');
    }, { timeoutMs: 60000 });
    await suite.step(`${n} running tasks: the next task call is -32600 "too many tasks"`, async () => {
        for (let i = 1; i < Number(n); i++)
            await create(a, { code: 'import time\ntime.sleep(60)', timeout_s: 120 });
        const { CreateTaskResultSchema } = await sdkTypes();
        const e = await rpcError(a.client.request({ method: 'tools/call', params: { name: 'exec', arguments: { code: 'print(1)' }, task: { ttl: 60000 } } },
            CreateTaskResultSchema), -32600, /too many tasks/, 'a task past the cap');
        log(`  ${e.message}`);
        const running = (await a.tasks.listTasks()).tasks;
        check(running.length === Number(n) && running.every((x) => x.status === 'working'),
            'the refused call left a task, or a finished one was kept', running);
        for (const x of running)
            await a.tasks.cancelTask(x.taskId);
    }, { timeoutMs: 60000 });
    await suite.step('another token still gets its task done', async () => {
        const b = await v1Http(base, tokB, 'mcp-exec-tasks-b');
        const s = await stream(b, { code: 'print("b works")' });
        check(!s.error && execResult(s.result, 'B').stdout === 'b works\n', 'B\'s task', s.error?.message ?? s.result);
        await closeQuietly(b);
    }, { timeoutMs: 30000 });
    await closeQuietly(a);
    suite.finish();
}

const parts = { v1, long, reconnect, modern, v2, stdio, start, gone, budget, caps };
if (!parts[part]) {
    log(`usage: node tasks.mjs ${Object.keys(parts).join('|')} ARGS...`);
    process.exit(2);
}
try {
    await parts[part](...rest);
} catch (e) {
    log(`tasks ${part}: ${short(e?.stack || e)}`);
    process.exit(1);
}
