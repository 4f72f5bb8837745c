// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/rich.mjs - figures and files through real MCP clients (issue 13), in the box:
//
//   node rich.mjs v1-stdio                 v1 SDK Client, StdioClientTransport (`mcp-exec stdio`)
//   node rich.mjs v1-http URL TOKEN        v1 SDK Client, StreamableHTTPClientTransport (URL/mcp)
//   node rich.mjs v1-sse URL TOKEN         v1 SDK Client, SSEClientTransport (URL/sse)
//   node rich.mjs v2-stdio                 v2 client over stdio: the 2026-07-28 era, then legacy
//   node rich.mjs v2-http URL TOKEN        v2 client over Streamable HTTP, the 2026-07-28 era
//
// With each: the tool offers "files"; a plot comes back as valid PNG image blocks (one shown, one
// left open) with metadata only in structuredContent (the v1 SDK validates it against the
// outputSchema itself); a CSV under /tmp/outputs as a text resource; a binary file as a blob; input
// files (text and base64) round-trip byte-exact; odd names make valid file: URIs; bad input files
// are an isError result. Sizes of what came back are logged (RICH sizes: ...).

import { createHash, randomBytes } from 'node:crypto';
import { MCP_EXEC, STDIO_ARGS, Suite, check, execResult, log, toolErrorText } from './lib.mjs';

const [part, base, token] = process.argv.slice(2);
const headers = token ? { 'X-MCP-AUTH': token } : {};
const suite = new Suite(`rich ${part}`);

const PLOT = `import matplotlib.pyplot as plt
plt.plot([1, 2, 3], [1, 4, 9])
plt.title("shown")
plt.show()
fig = plt.figure(figsize=(4, 3))
plt.bar(["a", "b"], [3, 5])
print("figures made")
`;

function b64(s, what) {
    check(typeof s === 'string' && s.length > 0, `${what}: no base64`, s);
    const buf = Buffer.from(s, 'base64');
    check(buf.toString('base64') === s, `${what}: not canonical base64`, s.slice(0, 80));
    return buf;
}

function pngSize(buf, what) {
    check(buf.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), `${what}: no PNG signature`);
    check(buf.toString('latin1', 12, 16) === 'IHDR', `${what}: no IHDR first`);
    check(buf.subarray(-12).toString('latin1', 4, 8) === 'IEND', `${what}: no IEND last`);
    return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

const blocks = (res, type) => (res.content || []).filter((c) => c.type === type);
const sizes = [];

async function exercise(client, kind) {
    await suite.step(`${kind}: the tool offers files and lists outputs`, async () => {
        const { tools } = await client.listTools();
        const t = tools?.[0];
        check(t?.inputSchema?.properties?.files?.type === 'array',
            `${kind}: no "files" argument: does the broker have the result channel?`, t?.inputSchema);
        if (t.outputSchema)
            check(t.outputSchema.properties?.images && t.outputSchema.properties?.files, `${kind}: outputSchema`, t.outputSchema);
        check(/\/tmp\/outputs/.test(t.description) && /plt\.show\(\)/.test(t.description), `${kind}: description`, t.description);
    }, { fatal: true });

    await suite.step(`${kind}: a plot comes back as PNG image blocks`, async () => {
        const res = await client.callTool({ name: 'exec', arguments: { code: PLOT } });
        const sc = execResult(res, `${kind}: plot`);
        check(sc.exit_code === 0 && sc.stdout === 'figures made\n', `${kind}: plot ran`, sc);
        const imgs = blocks(res, 'image');
        check(imgs.length === 2, `${kind}: ${imgs.length} image blocks, want 2 (shown, and open at the end)`, res.content);
        check(sc.images.length === 2 && sc.files.length === 0, `${kind}: images/files lists`, sc);
        imgs.forEach((b, i) => {
            check(b.mimeType === 'image/png', `${kind}: mimeType`, b.mimeType);
            const buf = b64(b.data, `${kind}: figure ${i}`);
            const dim = pngSize(buf, `${kind}: figure ${i}`);
            const e = sc.images[i];
            check(e.source === 'figure' && e.returned === true && e.mimeType === 'image/png' && !('path' in e),
                `${kind}: images[${i}]`, e);
            check(e.bytes === buf.length && e.width === dim.width && e.height === dim.height,
                `${kind}: images[${i}] does not describe its block`, { e, dim, bytes: buf.length });
            sizes.push(`${kind} figure ${i}: ${dim.width}x${dim.height}, ${buf.length} B PNG, ${b.data.length} B base64`);
        });
        // Metadata only: no image bytes in the structured result (nor in its text copy).
        const scText = JSON.stringify(sc);
        check(!scText.includes(imgs[0].data.slice(0, 64)) && scText.length < 4096, `${kind}: bytes in structuredContent`,
            scText.slice(0, 300));
        sizes.push(`${kind} plot reply: ${JSON.stringify(res).length} B, structuredContent ${scText.length} B`);
    }, { timeoutMs: 120000 });

    const csv = 'city,n\nZürich,3\n"a, b",4\n';
    await suite.step(`${kind}: a CSV in /tmp/outputs comes back as a text resource`, async () => {
        const code = `import os\nos.makedirs("/tmp/outputs")\nopen("/tmp/outputs/table.csv", "w", encoding="utf-8", newline="").write(${JSON.stringify(csv)})\n`;
        const res = await client.callTool({ name: 'exec', arguments: { code } });
        const sc = execResult(res, `${kind}: csv`);
        const r = blocks(res, 'resource');
        check(r.length === 1, `${kind}: resource blocks`, res.content);
        check(r[0].resource.uri === 'file:///tmp/outputs/table.csv' && r[0].resource.mimeType === 'text/csv', `${kind}: csv uri/mime`, r[0]);
        check(r[0].resource.text === csv && !('blob' in r[0].resource), `${kind}: csv text`, r[0].resource);
        const e = sc.files[0];
        check(sc.files.length === 1 && e.path === '/tmp/outputs/table.csv' && e.returned === true &&
              e.bytes === Buffer.byteLength(csv) && e.mimeType === 'text/csv', `${kind}: files[0]`, sc.files);
    }, { timeoutMs: 60000 });

    await suite.step(`${kind}: a binary file comes back as a blob`, async () => {
        const code = 'import os\nos.makedirs("/tmp/outputs/sub")\nopen("/tmp/outputs/sub/all.bin", "wb").write(bytes(range(256)) * 4)\n';
        const res = await client.callTool({ name: 'exec', arguments: { code } });
        const sc = execResult(res, `${kind}: blob`);
        const r = blocks(res, 'resource');
        check(r.length === 1 && r[0].resource.uri === 'file:///tmp/outputs/sub/all.bin', `${kind}: blob uri`, res.content);
        check(!('text' in r[0].resource) && r[0].resource.mimeType === 'application/octet-stream', `${kind}: blob kind`, r[0].resource);
        const want = Buffer.concat(Array(4).fill(Buffer.from([...Array(256).keys()])));
        check(b64(r[0].resource.blob, `${kind}: blob`).equals(want), `${kind}: blob bytes differ`);
        check(sc.files[0].bytes === 1024, `${kind}: files[0].bytes`, sc.files);
    }, { timeoutMs: 60000 });

    await suite.step(`${kind}: input files round-trip byte-exact`, async () => {
        const text = 'héllo\r\nwörld\t✓\n\u0001end';
        const bin = randomBytes(3000);
        const sha = (b) => createHash('sha256').update(b).digest('hex');
        const code = `import hashlib, os, shutil
os.makedirs("/tmp/outputs")
for n in ("in.txt", "in.bin"):
    print(n, hashlib.sha256(open(n, "rb").read()).hexdigest())
    shutil.copy(n, "/tmp/outputs/" + n)
print(os.getcwd(), sorted(os.listdir("/tmp")))
`;
        const res = await client.callTool({ name: 'exec', arguments: { code, files: [
            { name: 'in.txt', content: text },
            { name: 'in.bin', content: bin.toString('base64'), encoding: 'base64' },
        ] } });
        const sc = execResult(res, `${kind}: inputs`);
        check(sc.stdout === `in.txt ${sha(Buffer.from(text))}\nin.bin ${sha(bin)}\n/tmp ['in.bin', 'in.txt', 'outputs']\n`,
            `${kind}: what the program read`, sc);
        const r = blocks(res, 'resource');
        const txt = r.find((b) => b.resource.uri === 'file:///tmp/outputs/in.txt')?.resource;
        const blob = r.find((b) => b.resource.uri === 'file:///tmp/outputs/in.bin')?.resource;
        check(txt?.text === text, `${kind}: the text file back`, txt);
        check(blob && b64(blob.blob, `${kind}: in.bin`).equals(bin), `${kind}: the binary file back`);
    }, { timeoutMs: 60000 });

    await suite.step(`${kind}: odd names make valid file: URIs`, async () => {
        const name = 'sub dir/ä #1%?.txt';
        const code = `import os\nos.makedirs("/tmp/outputs/sub dir")\nopen("/tmp/outputs/${name}", "w").write("x")\n`;
        const res = await client.callTool({ name: 'exec', arguments: { code } });
        const sc = execResult(res, `${kind}: odd names`);
        const r = blocks(res, 'resource')[0]?.resource;
        check(r, `${kind}: no resource`, res.content);
        const u = new URL(r.uri);
        check(u.protocol === 'file:' && !u.search && !u.hash && decodeURIComponent(u.pathname) === `/tmp/outputs/${name}`,
            `${kind}: uri`, r.uri);
        check(sc.files[0].path === `/tmp/outputs/${name}`, `${kind}: path`, sc.files);
    }, { timeoutMs: 60000 });

    await suite.step(`${kind}: bad input files are an isError result`, async () => {
        for (const [files, want] of [
            [[{ name: '../x', content: '' }], /not a plain file name/],
            [[{ name: 'a', content: '1' }, { name: 'a', content: '2' }], /given twice/],
            [[{ name: 'a', content: '%%%', encoding: 'base64' }], /not valid base64/],
        ]) {
            const res = await client.callTool({ name: 'exec', arguments: { code: 'print("ran")', files } });
            check(res.isError === true && want.test(toolErrorText(res)), `${kind}: ${JSON.stringify(files)}`, res);
        }
    });
}

async function v1(kind) {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    let transport;
    if (kind === 'v1-stdio') {
        const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
        transport = new StdioClientTransport({ command: MCP_EXEC, args: STDIO_ARGS, stderr: 'inherit' });
    } else if (kind === 'v1-http') {
        const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
        transport = new StreamableHTTPClientTransport(new URL(base + '/mcp'), { requestInit: { headers } });
    } else {
        const { SSEClientTransport } = await import('@modelcontextprotocol/sdk/client/sse.js');
        transport = new SSEClientTransport(new URL(base + '/sse'), { requestInit: { headers } });
    }
    const client = new Client({ name: 'mcp-exec-rich', version: '1.0.0' });
    await client.connect(transport);
    await exercise(client, kind);
    await client.close();
}

async function v2(kind) {
    const { Client } = await import('@modelcontextprotocol/client');
    const make = async () => {
        if (kind === 'v2-stdio') {
            const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
            return new StdioClientTransport({ command: MCP_EXEC, args: STDIO_ARGS, stderr: 'inherit' });
        }
        const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
        return new StreamableHTTPClientTransport(new URL(base + '/mcp'), { requestInit: { headers } });
    };
    for (const mode of kind === 'v2-stdio' ? ['auto', 'legacy'] : ['auto']) {
        const client = new Client({ name: 'mcp-exec-rich', version: '1.0.0' },
            mode === 'auto' ? { versionNegotiation: { mode: 'auto' } } : {});
        await client.connect(await make());
        log(`rich ${kind}: ${mode} negotiation: ${client.getNegotiatedProtocolVersion?.()}`);
        await exercise(client, `${kind}/${mode}`);
        await client.close();
    }
}

try {
    if (part?.startsWith('v1-')) await v1(part);
    else if (part?.startsWith('v2-')) await v2(part);
    else {
        log('usage: node rich.mjs v1-stdio|v1-http|v1-sse|v2-stdio|v2-http [URL TOKEN]');
        process.exit(2);
    }
} catch (e) {
    await suite.step('connect', () => {
        throw e;
    });
}
for (const s of sizes) log(`RICH sizes: ${s}`);
suite.finish();
