// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/fault-sdk.mjs - the v1 TypeScript SDK Client (StdioClientTransport spawning
// `mcp-exec stdio`) for the fault tests (tests/integration/faults/test-fault-*.sh): what a real client
// sees when the server side breaks under an in-flight call.
//
//   node fault-sdk.mjs inflight NAME   connect, list the tools, call exec with a 60 s sleep; once
//                                      the call is sent, write $MCP_TEST_STATE/NAME.sent; when
//                                      the call ends in any way, write NAME.outcome (one JSON
//                                      object: kind "result" | "error", details, and whether the
//                                      transport closed) and exit 0. The wrapper does the fault
//                                      and judges the outcome (and whether it came at all).
//   node fault-sdk.mjs call            a fresh session; one call must print 42 (exit 0 / 1)

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { MCP_EXEC, STDIO_ARGS, check, execResult, log, mark, short, toolErrorText, withTimeout } from './lib.mjs';

async function connect(name) {
    const transport = new StdioClientTransport({ command: MCP_EXEC, args: STDIO_ARGS, stderr: 'inherit' });
    const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
    let closed = false;
    await withTimeout(client.connect(transport), 20000, 'connect');
    client.onclose = () => (closed = true);
    await withTimeout(client.listTools(), 20000, 'tools/list');
    return { client, transport, closed: () => closed };
}

async function inflight(name) {
    check(name, 'usage: fault-sdk.mjs inflight NAME');
    const c = await connect('mcp-exec-fault-' + name);
    const t0 = Date.now();
    const p = c.client.callTool(
        { name: 'exec', arguments: { code: 'import time\nprint("up", flush=True)\ntime.sleep(60)\n', timeout_s: 90 } },
        undefined,
        // Longer than anything the wrapper waits: a hang shows as no outcome, not as an SDK timeout.
        { timeout: 300000 },
    );
    mark(name + '.sent');
    let outcome;
    try {
        const res = await p;
        outcome = {
            kind: 'result',
            isError: res.isError === true,
            text: toolErrorText(res).slice(0, 2000),
            structured: res.structuredContent ?? null,
        };
    } catch (e) {
        outcome = { kind: 'error', code: e?.code ?? null, message: String(e?.message ?? e).slice(0, 2000) };
    }
    outcome.ms = Date.now() - t0;
    // Give a closing transport a moment to say so.
    await new Promise((r) => setTimeout(r, 300));
    outcome.closed = c.closed();
    log(`fault-sdk inflight ${name}: ${short(outcome)}`);
    mark(name + '.outcome', JSON.stringify(outcome));
    try {
        await withTimeout(c.client.close(), 5000, 'close');
    } catch {
        /* closed already */
    }
    process.exit(0);
}

async function call() {
    const c = await connect('mcp-exec-fault-call');
    const res = await withTimeout(
        c.client.callTool({ name: 'exec', arguments: { code: 'print(6*7)' } }),
        60000,
        'tools/call',
    );
    const sc = execResult(res, 'call');
    check(sc.stdout === '42\n' && sc.exit_code === 0, 'the call did not print 42', sc);
    log('fault-sdk call: ok');
    await withTimeout(c.client.close(), 5000, 'close');
    process.exit(0);
}

const commands = { inflight, call };
const [cmd, ...args] = process.argv.slice(2);
if (!commands[cmd]) {
    log('usage: fault-sdk.mjs inflight NAME | call');
    process.exit(2);
}
commands[cmd](...args).catch((e) => {
    log(`fault-sdk ${cmd}: FAIL: ${e?.message ?? e}`);
    process.exit(1);
});
