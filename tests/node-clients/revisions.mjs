// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/revisions.mjs - every protocol revision negotiated at least once, speaking raw
// newline-delimited JSON-RPC through `mcp-exec stdio` (no SDK lets one pick these):
//   - initialize with 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25: the server echoes the
//     version, and tools/list and tools/call work as that revision defines them
//   - an unknown version (2099-01-01) gets our newest initialize-era version
//   - a request before initialize gets an error response; a second initialize too
//   - batches: a JSON array is served under 2025-03-26 and refused under 2025-06-18
//   - 2026-07-28: server/discover, tools/list and a tools/call carrying the version in _meta,
//     an unsupported _meta version gets -32022 with the supported list

import {
    LATEST_LEGACY,
    LEGACY_VERSIONS,
    META_PV,
    MODERN,
    RawConn,
    Suite,
    check,
    log,
    modernMeta,
    short,
} from './lib.mjs';

const suite = new Suite('revisions');
const before = (a, b) => a < b; // ISO dates compare as strings

function isError(m, code) {
    return m && m.error && typeof m.error.code === 'number' && (code === undefined || m.error.code === code) &&
        typeof m.error.message === 'string' && !('result' in m);
}

async function session(label, fn) {
    const c = new RawConn(label);
    try {
        await fn(c);
    } finally {
        await c.close();
    }
}

// The text block of an exec result, parsed (every revision has content; only newer ones
// have structuredContent).
function execText(res, what) {
    const text = res?.content?.find((b) => b.type === 'text')?.text;
    check(typeof text === 'string', `${what}: no text content`, res);
    return JSON.parse(text);
}

for (const v of LEGACY_VERSIONS) {
    await suite.step(`initialize ${v}`, () =>
        session(v, async (c) => {
            const init = await c.initialize(v);
            check(init.result, 'initialize failed', init);
            check(init.result.protocolVersion === v, `asked for ${v}, the server answered ${init.result.protocolVersion}`, init);
            check(init.result.serverInfo?.name === 'mcp-exec', 'serverInfo', init.result);
            check(init.result.capabilities?.tools, 'no tools capability', init.result);
            c.notify('notifications/initialized');

            const ping = await c.request('ping');
            check(ping.result && Object.keys(ping.result).length === 0, 'ping', ping);

            const list = await c.request('tools/list', {});
            check(list.result?.tools?.map((t) => t.name).join() === 'exec,session_create,session_close', 'tools/list', list);
            const tool = list.result.tools[0];
            check(tool.name === 'exec' && tool.inputSchema?.type === 'object', 'the exec tool', tool);
            // What each revision introduced must be there from that revision on.
            if (!before(v, '2025-03-26'))
                check(tool.annotations?.destructiveHint === true, `${v}: no tool annotations`, tool);
            if (!before(v, '2025-06-18')) {
                check(tool.outputSchema?.type === 'object', `${v}: no outputSchema`, tool);
                check(typeof tool.title === 'string', `${v}: no tool title`, tool);
            }

            const call = await c.request('tools/call', { name: 'exec', arguments: { code: 'print(6*7)' } }, { ms: 30000 });
            check(call.result && call.result.isError === false, 'tools/call', call);
            const r = execText(call.result, v);
            check(r.stdout === '42\n' && r.exit_code === 0, 'the result text', r);
            if (!before(v, '2025-06-18'))
                check(call.result.structuredContent?.stdout === '42\n', `${v}: no structuredContent`, call.result);

            // Progress: 2025-03-26 added the message field.
            const prog = await c.request('tools/call', {
                name: 'exec', arguments: { code: 'import time; time.sleep(1.5)' }, _meta: { progressToken: `p-${v}` },
            }, { ms: 30000 });
            check(prog.result && prog.result.isError === false, 'tools/call with progress', prog);
            const notes = c.messages.filter((m) => m.method === 'notifications/progress' && m.params?.progressToken === `p-${v}`);
            check(notes.length >= 1, 'no progress notification', c.messages.slice(-5));
            if (!before(v, '2025-03-26'))
                check(notes.every((n) => typeof n.params.message === 'string'), `${v}: progress without message`, notes);

            const again = await c.initialize(v);
            check(isError(again), 'a second initialize was accepted', again);
            check(!c.messages.some((m) => m.__unparsable), 'a line on stdout that is not JSON', c.messages);
        }), { timeoutMs: 60000 });
}

await suite.step('an unknown version gets our newest', () =>
    session('2099', async (c) => {
        const init = await c.initialize('2099-01-01');
        check(init.result, 'initialize with an unknown version failed', init);
        check(init.result.protocolVersion === LATEST_LEGACY,
            `answered ${init.result.protocolVersion}, expected the newest initialize-era version ${LATEST_LEGACY}`, init);
        c.notify('notifications/initialized');
        const list = await c.request('tools/list');
        check(list.result?.tools?.[0]?.name === 'exec', 'tools/list after the fallback', list);
    }));

await suite.step('initialize asking for 2026-07-28 gets an initialize-era version', () =>
    session('init-2026', async (c) => {
        // 2026-07-28 has no initialize; a server must not claim it there.
        const init = await c.initialize(MODERN);
        check(init.result?.protocolVersion && init.result.protocolVersion !== MODERN &&
            LEGACY_VERSIONS.includes(init.result.protocolVersion), 'initialize answered', init);
    }));

await suite.step('a request before initialize gets an error', () =>
    session('pre-init', async (c) => {
        const list = await c.request('tools/list', {}, { id: 'early-list' });
        check(isError(list), 'tools/list before initialize did not get an error', list);
        const call = await c.request('tools/call', { name: 'exec', arguments: { code: 'print(1)' } }, { id: 'early-call' });
        check(isError(call), 'tools/call before initialize did not get an error', call);
        // The session is not spoiled: initialize still works.
        const init = await c.initialize(LATEST_LEGACY);
        check(init.result?.protocolVersion === LATEST_LEGACY, 'initialize after the refusal', init);
    }));

await suite.step('garbage gets a parse error, unknown methods -32601', () =>
    session('garbage', async (c) => {
        c.sendRaw('{"jsonrpc": "2.0", "id": 1, "method": ');
        const pe = await c.waitFor((m) => m.error, 10000, 'a parse error');
        check(isError(pe, -32700) && pe.id === null, 'parse error', pe);
        await c.initialize(LATEST_LEGACY);
        const nf = await c.request('no/such/method', {});
        check(isError(nf, -32601), 'unknown method', nf);
    }));

await suite.step('a batch is served under 2025-03-26', () =>
    session('batch-2025-03-26', async (c) => {
        const init = await c.initialize('2025-03-26');
        check(init.result?.protocolVersion === '2025-03-26', 'initialize', init);
        c.notify('notifications/initialized');
        c.sendRaw([
            { jsonrpc: '2.0', id: 'b1', method: 'ping' },
            { jsonrpc: '2.0', id: 'b2', method: 'tools/list' },
            { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'x', progress: 1 } },
            { jsonrpc: '2.0', id: 'b3', method: 'tools/call', params: { name: 'exec', arguments: { code: 'print("in a batch")' } } },
        ]);
        const reply = await c.waitFor((m) => Array.isArray(m), 30000, 'a batch response');
        const ids = reply.map((m) => m.id).sort();
        check(JSON.stringify(ids) === JSON.stringify(['b1', 'b2', 'b3']), 'batch response ids', reply);
        const byId = Object.fromEntries(reply.map((m) => [m.id, m]));
        check(byId.b1.result && byId.b2.result?.tools?.[0]?.name === 'exec', 'batch results', reply);
        check(execText(byId.b3.result, 'batch call').stdout === 'in a batch\n', 'the call in the batch', byId.b3);
    }, { timeoutMs: 40000 }));

await suite.step('a batch is refused under 2025-06-18', () =>
    session('batch-2025-06-18', async (c) => {
        const init = await c.initialize('2025-06-18');
        check(init.result?.protocolVersion === '2025-06-18', 'initialize', init);
        c.notify('notifications/initialized');
        c.sendRaw([
            { jsonrpc: '2.0', id: 'x1', method: 'ping' },
            { jsonrpc: '2.0', id: 'x2', method: 'tools/call', params: { name: 'exec', arguments: { code: 'print(1)' } } },
        ]);
        const err = await c.waitFor((m) => Array.isArray(m) || m.error || m.id === 'x1' || m.id === 'x2', 10000, 'an answer to the batch');
        check(!Array.isArray(err) && isError(err, -32600), 'the batch was not refused with Invalid Request', err);
        // Still usable, and nothing of the batch ran: replies would have come before this one.
        const ping = await c.request('ping', undefined, { id: 'after' });
        check(ping.result, 'ping after the refused batch', ping);
        const leaked = c.messages.filter((m) => Array.isArray(m) || m.id === 'x1' || m.id === 'x2');
        check(leaked.length === 0, 'parts of the refused batch were answered', leaked);
    }));

await suite.step('2026-07-28: server/discover, tools/list, tools/call with _meta', () =>
    session('2026-07-28', async (c) => {
        const disc = await c.request('server/discover', { _meta: modernMeta() });
        check(disc.result, 'server/discover failed', disc);
        const d = disc.result;
        check(Array.isArray(d.supportedVersions) && d.supportedVersions.includes(MODERN), 'supportedVersions', d);
        for (const v of LEGACY_VERSIONS) check(d.supportedVersions.includes(v), `supportedVersions lacks ${v}`, d);
        check(d.resultType === 'complete', 'resultType', d);
        check(d.capabilities?.tools, 'capabilities', d);
        check(d._meta?.['io.modelcontextprotocol/serverInfo']?.name === 'mcp-exec', 'serverInfo in _meta', d);

        const list = await c.request('tools/list', { _meta: modernMeta() });
        check(list.result?.tools?.[0]?.name === 'exec' && list.result.resultType === 'complete', 'tools/list', list);
        check(list.result.tools[0].outputSchema?.type === 'object', 'outputSchema', list.result.tools[0]);

        const call = await c.request('tools/call', {
            name: 'exec', arguments: { code: 'print(6*7)' }, _meta: modernMeta({ progressToken: 'modern-1' }),
        }, { ms: 30000 });
        check(call.result?.resultType === 'complete' && call.result.isError === false, 'tools/call', call);
        check(call.result.structuredContent?.stdout === '42\n', 'structuredContent', call.result);

        // Without the version in _meta there is no era to serve it in (and no initialize happened).
        const bare = await c.request('tools/call', { name: 'exec', arguments: { code: 'print(1)' } });
        check(isError(bare), 'a tools/call with neither initialize nor _meta was served', bare);

        const unsup = await c.request('tools/list', { _meta: modernMeta({ [META_PV]: '2099-01-01' }) });
        check(isError(unsup, -32022), 'an unsupported _meta version did not get -32022', unsup);
        check(unsup.error.data?.supported?.includes(MODERN) && unsup.error.data.requested === '2099-01-01',
            '-32022 data', unsup.error);
        check(!c.messages.some((m) => m.__unparsable), 'a line on stdout that is not JSON', c.messages);
        log(`  discover: ${short(d.supportedVersions)}`);
    }), { timeoutMs: 40000 });

suite.finish();
