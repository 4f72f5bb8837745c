// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/v1-sdk.mjs - the v1 TypeScript SDK (@modelcontextprotocol/sdk) Client with its
// StdioClientTransport spawning `mcp-exec stdio`, as any v1-based MCP host does.
//
//   node v1-sdk.mjs basic     connect, version, tools/list, calls, invalid arguments, progress,
//                             4 parallel calls
//   node v1-sdk.mjs cancel    AbortSignal on a long call; hand-off with the wrapper (marker files
//                             in $MCP_TEST_STATE), which checks the run unit went away
//   node v1-sdk.mjs busy      4 calls at once against MAX_CONCURRENT=1, MAX_QUEUE=1 (set up by
//                             the wrapper): some are refused at once as busy, the rest succeed
//   node v1-sdk.mjs privacy   one call whose code and stdin carry the canaries in
//                             $MCP_TEST_STATE/canaries; the wrapper looks for them meanwhile

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import {
    MCP_EXEC,
    STDIO_ARGS,
    Suite,
    TapTransport,
    check,
    execResult,
    log,
    mark,
    readState,
    short,
    toolErrorText,
    waitMarker,
} from './lib.mjs';

const MiB = 1024 * 1024;

async function connect(name = 'mcp-exec-v1-test') {
    const transport = new TapTransport(new StdioClientTransport({ command: MCP_EXEC, args: STDIO_ARGS, stderr: 'inherit' }));
    const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
    await client.connect(transport);
    return { client, transport };
}

// Every call lists the tools first: the v1 client validates structuredContent against the
// outputSchema it learned from tools/list (and throws if it does not match).
async function connected(suite) {
    let c;
    await suite.step(
        'connect',
        async () => {
            c = await connect();
            await c.client.listTools();
        },
        { fatal: true, timeoutMs: 20000 },
    );
    return c;
}

async function basic() {
    const suite = new Suite('v1-sdk basic');
    const { client, transport } = await connected(suite);

    await suite.step('negotiated protocol version', () => {
        const init = transport.sent('initialize')[0];
        check(init, 'no initialize was sent');
        check(init.params.protocolVersion === LATEST_PROTOCOL_VERSION, 'the SDK asked for an unexpected version', init);
        const reply = transport.responseTo(init.id)[0];
        check(reply?.result, 'no initialize result', reply);
        // The server speaks the SDK's newest revision, so it must echo it.
        check(reply.result.protocolVersion === LATEST_PROTOCOL_VERSION,
            `server answered protocolVersion ${reply.result.protocolVersion}, expected ${LATEST_PROTOCOL_VERSION}`, reply);
        check(transport.protocolVersion === LATEST_PROTOCOL_VERSION, 'the SDK did not adopt the version', transport.protocolVersion);
        const info = client.getServerVersion();
        check(info?.name === 'mcp-exec' && typeof info.version === 'string', 'serverInfo', info);
        check(client.getServerCapabilities()?.tools, 'no tools capability', client.getServerCapabilities());
    });

    await suite.step('tools/list', async () => {
        const { tools } = await client.listTools();
        // exec, and the session tools (on by default: MCP_EXEC_MAX_SESSIONS).
        check(Array.isArray(tools) && tools.map((t) => t.name).join() === 'exec,session_create,session_close',
              'expected exec, session_create and session_close', tools?.map((t) => t.name));
        const t = tools[0];
        check(t.name === 'exec', 'the tool is not called exec', t.name);
        check(typeof t.description === 'string' && t.description.length > 0, 'no description');
        const a = t.annotations;
        check(a && a.readOnlyHint === false && a.destructiveHint === true && a.idempotentHint === false &&
            a.openWorldHint === false, 'annotations', a);
        const is = t.inputSchema;
        check(is?.type === 'object' && is.properties?.code?.type === 'string' && is.required?.includes('code'),
            'inputSchema', is);
        check(is.properties.timeout_s?.type === 'integer' && is.properties.stdin?.type === 'string', 'inputSchema arguments', is);
        const os = t.outputSchema;
        check(os?.type === 'object', 'no outputSchema', t);
        for (const k of ['stdout', 'stderr', 'exit_code', 'duration_ms', 'truncated', 'timed_out'])
            check(os.properties?.[k], `outputSchema lacks ${k}`, os);
    });

    await suite.step('call print(6*7)', async () => {
        const res = await client.callTool({ name: 'exec', arguments: { code: 'print(6*7)' } });
        const sc = execResult(res, 'print(6*7)');
        check(sc.stdout === '42\n', 'stdout', sc);
        check(sc.stderr === '' && sc.exit_code === 0 && sc.timed_out === false && sc.truncated === false, 'result', sc);
        check(Number.isInteger(sc.duration_ms) && sc.duration_ms >= 0, 'duration_ms', sc);
    });

    await suite.step('stdin reaches the program', async () => {
        const res = await client.callTool({
            name: 'exec',
            arguments: { code: 'import sys; print(sys.stdin.read().upper(), end="")', stdin: 'héllo\nwörld\n' },
        });
        check(execResult(res, 'stdin').stdout === 'HÉLLO\nWÖRLD\n', 'stdout', res.structuredContent);
    });

    await suite.step('non-zero exit is a normal result, not isError', async () => {
        const res = await client.callTool({
            name: 'exec',
            arguments: { code: 'import sys\nprint("out")\nprint("bad", file=sys.stderr)\nsys.exit(3)' },
        });
        check(res.isError === false, 'isError must be false for a non-zero exit', res);
        const sc = execResult(res, 'exit 3');
        check(sc.exit_code === 3 && sc.stdout === 'out\n' && sc.stderr === 'bad\n', 'result', sc);
        const res2 = await client.callTool({ name: 'exec', arguments: { code: 'raise ValueError("boom")' } });
        const sc2 = execResult(res2, 'exception');
        check(sc2.exit_code === 1 && sc2.stderr.includes('ValueError: boom'), 'an exception', sc2);
    });

    const invalid = [
        ['empty code', { code: '' }],
        ['unknown argument', { code: 'print(1)', nonsense: 1 }],
        ['timeout_s -1', { code: 'print(1)', timeout_s: -1 }],
        ['stdin over 1 MiB', { code: 'print(1)', stdin: 'x'.repeat(MiB + 1) }],
        ['missing code', {}],
        ['code not a string', { code: 42 }],
    ];
    for (const [what, args] of invalid) {
        await suite.step(`invalid arguments: ${what} -> isError`, async () => {
            let res;
            try {
                res = await client.callTool({ name: 'exec', arguments: args });
            } catch (e) {
                check(false, 'a JSON-RPC error instead of a tool result with isError', e.message);
            }
            check(res.isError === true, 'isError is not true', res);
            const text = toolErrorText(res);
            check(text.length > 0, 'no error text', res);
            check(res.structuredContent === undefined, 'an error result with structuredContent', res);
        });
    }

    await suite.step('stdin of exactly 1 MiB is accepted', async () => {
        const res = await client.callTool({
            name: 'exec',
            arguments: { code: 'import sys; print(len(sys.stdin.buffer.read()))', stdin: 'y'.repeat(MiB) },
        });
        check(execResult(res, '1 MiB stdin').stdout === `${MiB}\n`, 'stdout', res.structuredContent);
    });

    await suite.step('progress notifications for a 3 s run', async () => {
        const progress = [];
        const res = await client.callTool(
            { name: 'exec', arguments: { code: 'import time\ntime.sleep(3)\nprint("slept")' } },
            undefined,
            { onprogress: (p) => progress.push(p) },
        );
        check(execResult(res, 'sleep 3').stdout === 'slept\n', 'stdout', res.structuredContent);
        check(progress.length >= 1, 'no progress notification', progress);
        for (let i = 1; i < progress.length; i++)
            check(progress[i].progress > progress[i - 1].progress, 'progress did not increase', progress);
        // The token the SDK sent is what came back (the SDK routes by it, so getting any proves it).
        const call = transport.sent('tools/call').at(-1);
        check(call.params._meta?.progressToken !== undefined, 'the SDK sent no progressToken', call);
        log(`  progress: ${short(progress.map((p) => [p.progress, p.message]))}`);
    });

    await suite.step('4 parallel calls of 1 s each', async () => {
        const code = (i) => `import os, time\ntime.sleep(1)\nprint(${i}, os.getpid() > 0)`;
        const t0 = Date.now();
        const results = await Promise.all(
            [0, 1, 2, 3].map((i) => client.callTool({ name: 'exec', arguments: { code: code(i), timeout_s: 60 } })),
        );
        results.forEach((res, i) => {
            const sc = execResult(res, `parallel call ${i}`);
            check(sc.stdout === `${i} True\n` && sc.exit_code === 0, `parallel call ${i}`, sc);
        });
        log(`  4 parallel calls took ${Date.now() - t0} ms`);
    }, { timeoutMs: 90000 });

    await suite.step('the session still works', async () => {
        const res = await client.callTool({ name: 'exec', arguments: { code: 'print("still here")' } });
        check(execResult(res, 'last call').stdout === 'still here\n', 'stdout', res.structuredContent);
    });
    await client.close();
    suite.finish();
}

async function cancel() {
    const suite = new Suite('v1-sdk cancel');
    const { client, transport } = await connected(suite);
    let abortedId;

    await suite.step('an aborted call rejects quickly', async () => {
        const ac = new AbortController();
        const progress = [];
        const p = client.callTool(
            { name: 'exec', arguments: { code: 'import time\nprint("sleeping", flush=True)\ntime.sleep(60)\nprint("woke")', timeout_s: 120 } },
            undefined,
            { signal: ac.signal, timeout: 120000, onprogress: (x) => progress.push(x) },
        );
        let settled = null;
        p.then((r) => (settled = { r }), (e) => (settled = { e }));
        mark('call-sent');
        // The wrapper says go once the run's unit is active.
        await waitMarker('abort', 30000, 'waiting for the run unit');
        check(settled === null, 'the call ended before it was aborted', settled);
        abortedId = transport.sent('tools/call').at(-1).id;
        const t0 = Date.now();
        ac.abort('test cancels');
        let err;
        try {
            await p;
        } catch (e) {
            err = e;
        }
        const ms = Date.now() - t0;
        check(err, 'the aborted call resolved instead of rejecting', settled);
        check(ms < 2000, `the aborted call took ${ms} ms to reject`);
        const cancelled = transport.sent('notifications/cancelled');
        check(cancelled.length === 1 && cancelled[0].params.requestId === abortedId,
            'the SDK did not send notifications/cancelled for the call', transport.sent('notifications/cancelled'));
        log(`  rejected after ${ms} ms: ${err.message}`);
        mark('aborted', String(ms));
    }, { timeoutMs: 60000 });

    // The wrapper checks that no run unit is left while this session stays open (closing it
    // would stop the run anyway and hide a cancellation that does nothing).
    await suite.step('no run unit left (checked by the wrapper)', async () => {
        const verdict = await waitMarker('units-checked', 30000, 'the unit check');
        check(verdict.trim() === 'clean', 'the wrapper found run units left after the cancellation', verdict);
    }, { timeoutMs: 40000 });

    await suite.step('no reply for the cancelled request', () => {
        check(abortedId !== undefined, 'no aborted call');
        const replies = transport.responseTo(abortedId);
        check(replies.length === 0, 'the server replied to a cancelled request', replies);
        // No progress either after the cancellation (spec: no further messages for it).
        const token = transport.sent('tools/call').find((m) => m.id === abortedId)?.params?._meta?.progressToken;
        const cancelAt = transport.messages.find((m) => m.dir === 'out' && m.msg.method === 'notifications/cancelled')?.t;
        const late = transport.messages.filter(
            (m) => m.dir === 'in' && m.t > cancelAt + 200 && m.msg.method === 'notifications/progress' &&
                m.msg.params?.progressToken === token,
        );
        check(late.length === 0, 'progress notifications for the cancelled call after the cancellation', late.map((m) => m.msg));
    });

    await suite.step('the session still works after the cancellation', async () => {
        const res = await client.callTool({ name: 'exec', arguments: { code: 'print("after cancel")' } });
        check(execResult(res, 'after cancel').stdout === 'after cancel\n', 'stdout', res.structuredContent);
    });

    await client.close();
    suite.finish();
}

// Fires one call per entry of `clients` at the same moment and checks the outcome against a
// server with room for 1 running + 1 queued call.
async function fireFour(clients) {
    const code = (i) => `import time\ntime.sleep(2)\nprint("call", ${i})`;
    const t0 = Date.now();
    const outcomes = await Promise.all(
        clients.map((client, i) =>
            client.callTool({ name: 'exec', arguments: { code: code(i), timeout_s: 60 } }).then(
                (res) => ({ i, res, ms: Date.now() - t0 }),
                (err) => ({ i, err, ms: Date.now() - t0 }),
            ),
        ),
    );
    const summary = outcomes.map((o) =>
        o.err ? `#${o.i} threw ${o.err.message}` :
        o.res.isError ? `#${o.i} isError after ${o.ms} ms: ${toolErrorText(o.res)}` :
        `#${o.i} ok after ${o.ms} ms: ${JSON.stringify(o.res.structuredContent?.stdout)}`);
    log('  ' + summary.join('\n  '));
    for (const o of outcomes) check(!o.err, `call ${o.i} failed with a protocol error`, o.err?.message);
    const refused = outcomes.filter((o) => o.res.isError);
    const ok = outcomes.filter((o) => !o.res.isError);
    check(refused.length >= 1, 'no call was refused', summary);
    check(ok.length >= 1, 'no call succeeded', summary);
    for (const o of refused) {
        check(/busy/i.test(toolErrorText(o.res)), `refused call ${o.i} does not say busy`, toolErrorText(o.res));
        // Immediate: before any 2 s run could have finished.
        check(o.ms < 1500, `refused call ${o.i} took ${o.ms} ms; a full queue must refuse at once`);
    }
    for (const o of ok) {
        const sc = execResult(o.res, `call ${o.i}`);
        check(sc.stdout === `call ${o.i}\n` && sc.exit_code === 0, `call ${o.i}`, sc);
    }
    // 1 running + 1 queued: exactly two get through.
    check(ok.length === 2 && refused.length === 2, `expected 2 to run and 2 to be refused`, summary);
}

async function busy() {
    const suite = new Suite('v1-sdk busy');
    const { client } = await connected(suite);

    await suite.step('4 calls at once on one connection, room for 1 running + 1 queued',
        () => fireFour([client, client, client, client]), { timeoutMs: 60000 });

    await suite.step('calls work again once the queue drained', async () => {
        const res = await client.callTool({ name: 'exec', arguments: { code: 'print("drained")' } });
        check(execResult(res, 'after').stdout === 'drained\n', 'stdout', res.structuredContent);
    });

    // The same from four clients, one call each (as four agents sharing the server would).
    const more = [];
    await suite.step('connect 3 more clients', async () => {
        for (let i = 0; i < 3; i++) {
            const c = await connect(`mcp-exec-v1-test-${i}`);
            await c.client.listTools();
            more.push(c.client);
        }
    }, { timeoutMs: 30000 });
    if (more.length === 3)
        await suite.step('4 calls at once from 4 connections, room for 1 running + 1 queued',
            () => fireFour([client, ...more]), { timeoutMs: 60000 });

    for (const c of [client, ...more]) await c.close();
    suite.finish();
}

async function privacy() {
    const suite = new Suite('v1-sdk privacy');
    const [cCode, cStdin] = readState('canaries').split('\n');
    check(cCode && cStdin, 'no canaries');
    const { client } = await connected(suite);

    await suite.step('a call carrying the canaries in code and stdin', async () => {
        const code = `# ${cCode}\nimport sys, time\nsys.stdout.write(sys.stdin.read())\n` +
            `print(${JSON.stringify(cCode)}[::-1], flush=True)\ntime.sleep(6)\n`;
        const p = client.callTool({ name: 'exec', arguments: { code, stdin: `input ${cStdin}\n`, timeout_s: 60 } });
        mark('call-sent');
        const res = await p;
        const sc = execResult(res, 'canary call');
        const rev = [...cCode].reverse().join('');
        check(sc.stdout === `input ${cStdin}\n${rev}\n` && sc.exit_code === 0, 'output', sc);
    }, { timeoutMs: 60000 });
    await client.close();
    suite.finish();
}

const commands = { basic, cancel, busy, privacy };
const cmd = commands[process.argv[2]];
if (!cmd) {
    log(`usage: node v1-sdk.mjs ${Object.keys(commands).join('|')}`);
    process.exit(2);
}
await cmd();
