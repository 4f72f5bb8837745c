// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/confirm.mjs - code mode's confirmation of a destructive tool (issue 40) with
// the v1 TypeScript SDK (@modelcontextprotocol/sdk) Client: one exec call whose code calls a
// destructive upstream tool the operator did not confirm; mcp-exec asks this client with
// elicitation/create (form mode) and the client answers as told.
//
//   node confirm.mjs TRANSPORT ANSWER CODE_FILE [session|task|ext-raw|ext-tasks|mrtr-raw|mrtr-v2]
//     TRANSPORT  http:URL (Streamable HTTP) or stdio (`mcp-exec stdio`)
//     ANSWER     accept | decline | cancel (the client declares elicitation and answers so)
//                none (the client declares no elicitation capability)
//     session    the exec runs in a sandbox session made first (session_create), closed after
//     task       the exec runs as a task (2025-11-25: client.experimental.tasks.callToolStream), whose
//                statuses are listed in "statuses"; the question comes on its tasks/result
//     ext-raw    2026-07-28, raw HTTP: tools/call declaring the tasks extension and elicitation
//                (form); tasks/get until input_required, its inputRequests' questions are answered
//                by tasks/update {taskId, inputResponses}, then tasks/get until it ends
//     ext-tasks  the same with @modelcontextprotocol/client 2.x and ext-tasks' task session
//                (onInputRequest answers), its requests sent by a rawDispatch of ours
//     mrtr-raw   2026-07-28, raw HTTP, no task: tools/call declaring elicitation (form) alone is
//                answered with InputRequiredResult; it is retried with the inputResponses and the
//                requestState until the result comes ("statuses": the resultTypes seen)
//     mrtr-v2    the same with @modelcontextprotocol/client 2.x alone (versionNegotiation auto,
//                an elicitation/create handler): its multi round-trip driver retries
//
// Prints one JSON line: {"result": the exec result's structuredContent, "asked": [the
// elicitation/create params received], "statuses": [a task's, as tasks/get said]}; exits 1 if the
// call failed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';

import { MCP_EXEC, META_CAPS, MODERN, STDIO_ARGS, modernMeta } from './lib.mjs';

const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const CAPS = { extensions: { [TASKS_EXT]: {} }, elicitation: { form: {} } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One 2026-07-28 POST; its JSON-RPC response (from JSON or the event stream).
let rawId = 1;
async function post(base, method, params, name) {
    const body = { jsonrpc: '2.0', id: rawId++, method,
                   params: { ...params, _meta: { ...modernMeta({ [META_CAPS]: CAPS }), ...(params._meta || {}) } } };
    const r = await fetch(base, { method: 'POST', body: JSON.stringify(body), headers: {
        'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': MODERN, 'Mcp-Method': method, ...(name ? { 'Mcp-Name': name } : {}) } });
    const text = await r.text();
    if (!(r.headers.get('content-type') || '').startsWith('text/event-stream'))
        return JSON.parse(text);
    for (const line of text.split('\n'))
        if (line.startsWith('data:') && JSON.parse(line.slice(5)).id === body.id)
            return JSON.parse(line.slice(5));
    throw new Error(`${method}: no response on the stream`);
}

function elicitResult() {
    return answer === 'accept' ? { action: 'accept', content: { confirm: true } } : { action: answer };
}

// ext-raw: the exec's CallToolResult.
async function extRaw(base, args) {
    const call = await post(base, 'tools/call', { name: 'exec', arguments: args }, 'exec');
    if (call.result?.resultType !== 'task')
        return call.result ?? Promise.reject(new Error(`tools/call: ${JSON.stringify(call)}`));
    const id = call.result.taskId;
    statuses.push(call.result.status);
    for (let i = 0; i < 600; i++) {
        const g = (await post(base, 'tasks/get', { taskId: id }, id)).result;
        if (statuses[statuses.length - 1] !== g.status)
            statuses.push(g.status);
        if (g.status === 'completed')
            return g.result;
        if (g.status === 'failed' || g.status === 'cancelled')
            throw new Error(`the task ${g.status}: ${JSON.stringify(g)}`);
        if (g.status === 'input_required') {
            const inputResponses = {};
            for (const [key, req] of Object.entries(g.inputRequests)) {
                asked.push({ key, ...req.params, method: req.method });
                inputResponses[key] = elicitResult();
            }
            const u = await post(base, 'tasks/update', { taskId: id, inputResponses }, id);
            if (!u.result)
                throw new Error(`tasks/update: ${JSON.stringify(u)}`);
        }
        await sleep(100);
    }
    throw new Error('the task never ended');
}

// mrtr-raw: the exec's CallToolResult through InputRequiredResult and retries.
async function mrtrRaw(base, args) {
    const caps = { elicitation: { form: {} } };
    let params = { name: 'exec', arguments: args, _meta: modernMeta({ [META_CAPS]: caps }) };
    for (let round = 0; round < 10; round++) {
        const r = await post(base, 'tools/call', params, 'exec');
        if (!r.result)
            throw new Error(`tools/call: ${JSON.stringify(r)}`);
        statuses.push(r.result.resultType);
        if (r.result.resultType !== 'input_required')
            return r.result;
        const inputResponses = {};
        for (const [key, req] of Object.entries(r.result.inputRequests ?? {})) {
            asked.push({ key, ...req.params, method: req.method });
            inputResponses[key] = elicitResult();
        }
        params = { ...params, inputResponses, requestState: r.result.requestState };
    }
    throw new Error('still input_required after 10 rounds');
}

// mrtr-v2: @modelcontextprotocol/client's own multi round-trip driver.
async function mrtrV2(base, args) {
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const c = new Client({ name: 'mcp-exec-confirm-v2', version: '1.0.0' },
                         { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: { form: {} } } });
    c.setRequestHandler('elicitation/create', async (req) => {
        asked.push({ ...req.params, method: req.method });
        return elicitResult();
    });
    await c.connect(new StreamableHTTPClientTransport(new URL(base)));
    try {
        if (c.getNegotiatedProtocolVersion() !== MODERN)
            throw new Error(`negotiated ${c.getNegotiatedProtocolVersion()}`);
        const res = await c.callTool({ name: 'exec', arguments: args }, { timeout: 120000 });
        statuses.push(res.resultType ?? 'complete');
        return res;
    } finally {
        await c.close();
    }
}

// ext-tasks: the same through @modelcontextprotocol/client and ext-tasks.
async function extTasks(base, args) {
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const { createTaskSessionFromClient, resultFromTaskOutcome } = await import('@modelcontextprotocol/ext-tasks/client');
    const c = new Client({ name: 'mcp-exec-confirm-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await c.connect(new StreamableHTTPClientTransport(new URL(base)));
    if (c.getNegotiatedProtocolVersion() !== MODERN)
        throw new Error(`negotiated ${c.getNegotiatedProtocolVersion()}`);
    const rawDispatch = async (request, options = {}) => {
        const name = options.context?.headers?.['Mcp-Name'] ?? (request.method === 'tools/call' ? request.params.name : undefined);
        const msg = await post(base, request.method, request.params, name);
        return 'error' in msg ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result };
    };
    const session = createTaskSessionFromClient(c, {
        endpointId: 'mcp-exec-confirm', rawDispatch,
        v2RequestFraming: { protocolVersion: MODERN, clientInfo: { name: 'mcp-exec-confirm-v2', version: '1.0.0' },
                            clientCapabilities: { elicitation: { form: {} } } },
        onInputRequest: async (req) => {
            asked.push({ ...req.params, kind: req.kind });    // ext-tasks' projection: kind, not method
            return elicitResult();
        },
    });
    try {
        const ex = await session.callTool('exec', args, { task: { preference: 'prefer' }, requestTimeoutMs: 60000 });
        statuses.push(ex.kind);
        const { outcome } = await ex.settle();
        statuses.push(outcome.status);
        if (outcome.status !== 'completed')
            throw new Error(`the execution ${outcome.status}: ${outcome.error?.message}`);
        return resultFromTaskOutcome(outcome);
    } finally {
        await session.close();
        await c.close();
    }
}

const [where, answer, codeFile, inSession] = process.argv.slice(2);
if (!where || !['accept', 'decline', 'cancel', 'none'].includes(answer) || !codeFile) {
    console.error('usage: confirm.mjs http:URL|stdio accept|decline|cancel|none CODE_FILE');
    process.exit(2);
}

const asked = [];
const statuses = [];
const capabilities = answer === 'none' ? {} : { elicitation: {} };
const client = new Client({ name: 'mcp-exec-confirm-test', version: '1.0.0' }, { capabilities });
if (answer !== 'none')
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
        asked.push(req.params);
        return answer === 'accept' ? { action: 'accept', content: { confirm: true } } : { action: answer };
    });

const modern = { 'ext-raw': extRaw, 'ext-tasks': extTasks, 'mrtr-raw': mrtrRaw, 'mrtr-v2': mrtrV2 };
if (modern[inSession]) {
    try {
        const args = { code: readFileSync(codeFile, 'utf8'), timeout_s: 60 };
        const res = await modern[inSession](where.slice(5), args);
        console.log(JSON.stringify({ result: res.structuredContent ?? null, isError: !!res.isError, asked, statuses }));
        process.exit(0);
    } catch (e) {
        console.error(`confirm.mjs: ${e?.stack ?? e}`);
        console.log(JSON.stringify({ error: String(e), asked, statuses }));
        process.exit(1);
    }
}

const transport = where.startsWith('http:')
    ? new StreamableHTTPClientTransport(new URL(where.slice(5)))
    : new StdioClientTransport({ command: MCP_EXEC, args: STDIO_ARGS, stderr: 'inherit' });
try {
    await client.connect(transport);
    const args = { code: readFileSync(codeFile, 'utf8') };
    if (inSession === 'session') {
        const made = await client.callTool({ name: 'session_create', arguments: {} }, undefined, { timeout: 120000 });
        args.session = made.structuredContent?.session;
        if (!args.session)
            throw new Error(`session_create gave no session: ${JSON.stringify(made)}`);
    }
    let res;
    if (inSession === 'task') {
        const stream = client.experimental.tasks.callToolStream({ name: 'exec', arguments: args }, undefined,
                                                                { timeout: 120000, task: { ttl: 600000 } });
        for await (const m of stream) {
            if (m.type === 'taskCreated' || m.type === 'taskStatus')
                statuses.push(m.task.status);
            else if (m.type === 'result')
                res = m.result;
            else if (m.type === 'error')
                throw m.error;
        }
    } else
        res = await client.callTool({ name: 'exec', arguments: args }, undefined, { timeout: 120000 });
    if (args.session)
        await client.callTool({ name: 'session_close', arguments: { session: args.session } });
    console.log(JSON.stringify({ result: res.structuredContent ?? null, isError: !!res.isError, asked, statuses }));
    await client.close();
    process.exit(0);
} catch (e) {
    console.error(`confirm.mjs: ${e?.stack ?? e}`);
    console.log(JSON.stringify({ error: String(e), asked, statuses }));
    process.exit(1);
}
