// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/v2-client.mjs - the v2 TypeScript client (@modelcontextprotocol/client) over stdio
// (`mcp-exec stdio`) with versionNegotiation {mode: 'auto'}: it probes the stateless 2026-07-28
// era with server/discover first and falls back to initialize only for a legacy server. mcp-exec
// implements 2026-07-28, so the client must end up there, and tools/list and tools/call must
// work in that era. Then the same on a recorded connection (what went over the wire), and the
// default (legacy) mode for comparison.

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
    MCP_EXEC,
    META_PV,
    MODERN,
    STDIO_ARGS,
    Suite,
    TapTransport,
    check,
    execResult,
    log,
    short,
    toolErrorText,
} from './lib.mjs';

const suite = new Suite('v2-client');

function newTransport() {
    return new StdioClientTransport({ command: MCP_EXEC, args: STDIO_ARGS, stderr: 'inherit' });
}

async function useExec(client, what) {
    const { tools } = await client.listTools();
    check(tools.map((t) => t.name).join() === 'exec,session_create,session_close', `${what}: tools/list`,
          tools?.map((t) => t.name));
    const t = tools[0];
    check(t.inputSchema?.properties?.code && t.outputSchema?.type === 'object', `${what}: schemas`, t);
    check(t.annotations?.destructiveHint === true && t.annotations?.readOnlyHint === false, `${what}: annotations`, t.annotations);
    const res = await client.callTool({ name: 'exec', arguments: { code: 'print(6*7)' } });
    const sc = execResult(res, `${what}: print(6*7)`);
    check(sc.stdout === '42\n' && sc.exit_code === 0, `${what}: result`, sc);
    const bad = await client.callTool({ name: 'exec', arguments: { code: '' } });
    check(bad.isError === true && toolErrorText(bad).length > 0, `${what}: empty code is not isError`, bad);
    const nz = await client.callTool({ name: 'exec', arguments: { code: 'import sys; sys.exit(5)' } });
    check(nz.isError === false && execResult(nz, `${what}: exit 5`).exit_code === 5, `${what}: exit 5`, nz);
}

// 1. The SDK's own StdioClientTransport: the probe runs on a sibling `mcp-exec stdio`.
{
    let client;
    await suite.step('auto negotiation (SDK stdio transport) connects', async () => {
        client = new Client({ name: 'mcp-exec-v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
        await client.connect(newTransport());
    }, { timeoutMs: 30000 });
    if (client) {
        await suite.step('auto negotiation ends in the 2026-07-28 era', () => {
            const era = client.getProtocolEra();
            const v = client.getNegotiatedProtocolVersion();
            log(`  era ${era}, version ${v}`);
            check(era === 'modern', `the client fell back to the ${era} era`, { era, v });
            check(v === MODERN, `negotiated ${v}, expected ${MODERN}`);
            check(client.getServerVersion()?.name === 'mcp-exec', 'serverInfo', client.getServerVersion());
            check(client.getServerCapabilities()?.tools, 'no tools capability', client.getServerCapabilities());
            check(typeof client.getInstructions() === 'string', 'no instructions', client.getInstructions());
        });
        await suite.step('tools/list and tools/call in the 2026-07-28 era', () => useExec(client, 'modern'), { timeoutMs: 30000 });
        await client.close();
    }
}

// 2. The same on a recorded connection (the client then probes in place): the wire shows the
//    probe, no initialize, and the protocol version in every request's _meta.
{
    let client, tap;
    await suite.step('auto negotiation on a recorded connection', async () => {
        tap = new TapTransport(newTransport());
        client = new Client({ name: 'mcp-exec-v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
        await client.connect(tap);
        check(client.getProtocolEra() === 'modern' && client.getNegotiatedProtocolVersion() === MODERN,
            'not the 2026-07-28 era', { era: client.getProtocolEra(), v: client.getNegotiatedProtocolVersion() });
        await useExec(client, 'recorded');
    }, { timeoutMs: 30000 });
    if (tap) {
        await suite.step('the wire: server/discover, no initialize, _meta protocol version', () => {
            const out = tap.messages.filter((m) => m.dir === 'out').map((m) => m.msg);
            check(out[0]?.method === 'server/discover', 'the first message is not server/discover', out[0]);
            check(out[0].params?._meta?.[META_PV] === MODERN, 'server/discover without the version in _meta', out[0]);
            const disc = tap.responseTo(out[0].id)[0];
            check(disc?.result?.supportedVersions?.includes(MODERN), 'DiscoverResult without 2026-07-28', disc);
            check(disc.result.resultType === 'complete', 'DiscoverResult without resultType complete', disc);
            check(tap.sent('initialize').length === 0, 'initialize was sent after all', tap.sent('initialize'));
            const calls = tap.sent('tools/call');
            check(calls.length >= 1, 'no tools/call recorded');
            for (const c of [...calls, ...tap.sent('tools/list')])
                check(c.params?._meta?.[META_PV] === MODERN, `${c.method} without the version in _meta`, c);
            const reply = tap.responseTo(calls[0].id)[0];
            check(reply?.result?.resultType === 'complete', 'tools/call result without resultType complete', reply);
            log(`  wire: ${out.map((m) => m.method).join(', ')}`);
        });
    }
    await client?.close();
}

// 3. The default mode (legacy) for comparison: plain initialize.
{
    let client, tap;
    await suite.step('legacy mode negotiates by initialize', async () => {
        tap = new TapTransport(newTransport());
        client = new Client({ name: 'mcp-exec-v2-test', version: '1.0.0' });
        await client.connect(tap);
        const init = tap.sent('initialize')[0];
        check(init, 'no initialize sent');
        const asked = init.params.protocolVersion;
        const reply = tap.responseTo(init.id)[0];
        check(reply?.result?.protocolVersion === asked, `asked for ${asked}, got`, reply);
        check(client.getProtocolEra() === 'legacy' && client.getNegotiatedProtocolVersion() === asked,
            'era/version', { era: client.getProtocolEra(), v: client.getNegotiatedProtocolVersion() });
        log(`  legacy: ${asked}`);
        await useExec(client, 'legacy');
    }, { timeoutMs: 30000 });
    await client?.close();
}

suite.finish();
