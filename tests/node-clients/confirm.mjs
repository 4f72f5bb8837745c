// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/confirm.mjs - code mode's confirmation of a destructive tool (issue 40) with
// the v1 TypeScript SDK (@modelcontextprotocol/sdk) Client: one exec call whose code calls a
// destructive upstream tool the operator did not confirm; mcp-exec asks this client with
// elicitation/create (form mode) and the client answers as told.
//
//   node confirm.mjs TRANSPORT ANSWER CODE_FILE [session|task]
//     TRANSPORT  http:URL (Streamable HTTP) or stdio (`mcp-exec stdio`)
//     ANSWER     accept | decline | cancel (the client declares elicitation and answers so)
//                none (the client declares no elicitation capability)
//     session    the exec runs in a sandbox session made first (session_create), closed after
//     task       the exec runs as a task (2025-11-25: client.experimental.tasks.callToolStream), whose
//                statuses are listed in "statuses"; the question comes on its tasks/result
//
// Prints one JSON line: {"result": the exec result's structuredContent, "asked": [the
// elicitation/create params received], "statuses": [a task's, as tasks/get said]}; exits 1 if the
// call failed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';

import { MCP_EXEC, STDIO_ARGS } from './lib.mjs';

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
