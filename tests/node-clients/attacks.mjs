// SPDX-License-Identifier: LGPL-2.1-or-later
// tests/node-clients/attacks.mjs - the attack-corpus harness (format: tests/attacks/README.md).
//
// Runs the cases tests/attacks/<category>-<name>.py (.js: JavaScript, .sh: bash), in file-name order, as `exec` calls through
// ONE session of the v1 SDK Client over StdioClientTransport spawning `mcp-exec stdio`, inside
// the test box as root. After every case it checks that the service still answers, that the
// next run is clean, and that no run unit and no process of a dynamic uid is left.
//
//   node attacks.mjs [NAME=VALUE]... [CASE.py|DIR]...
//
// Without files it runs every <category>-*.py in $ATTACK_DIR (default ../attacks next to this
// script). NAME=VALUE arguments set the environment variables below (the box's `exec` passes no
// environment through):
//   ATTACK_DIR        directory of the cases
//   ATTACK_CASES      glob(s) on the file name, separated by spaces or commas ("net-*", "out-nul.py")
//   ATTACK_RESULTS    results file, one JSON line per case (default $MCP_TEST_STATE/attack-results.jsonl)
//   ATTACK_TESTHOST4, ATTACK_TESTHOST6, ATTACK_TESTPORT, ATTACK_HOSTPORT, ATTACK_ABSTRACT
//                     placeholder values (set by tests/integration/sandbox/test-attacks.sh)
//   ATTACK_LISTEN_LOGS  comma-separated listener log files for `# after: listeners-silent`
//   ATTACK_NEEDS      comma-separated `# needs:` tags the wrapper set up (testhost, hostlisten)
//   ATTACK_BUDGET_S   seconds for all cases; cases not started by then fail as "not run" (so a
//                     slow pass reports what it did instead of being killed by the test timeout)
//   ATTACK_TRANSPORT  stdio (default) or http: the v1 SDK's StreamableHTTPClientTransport to
//                     ATTACK_HTTP_URL (default http://127.0.0.1:8080/mcp) instead
//   ATTACK_EGRESS_LOGS  the test internet's logs (egress cases, tests/lib/egress-net.sh)
// Exit status: 0 if every case passed (and at least one ran), 1 otherwise, 2 on usage errors.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { execFile } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { MCP_EXEC, STATE, STDIO_ARGS, log } from './lib.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const DYN_UID_MIN = 61184;
const DYN_UID_MAX = 65519;
const KEYS = new Set(['attack', 'expect', 'check', 'timeout', 'stdin', 'stdin-bytes', 'code-bytes', 'files', 'files-bytes',
    'needs', 'after', 'network', 'packages']);
const AFTER_CHECKS = new Set(['listeners-silent', 'egress-settle']);

// ---- cases ------------------------------------------------------------------------------------

function globRe(g) {
    return new RegExp('^' + g.replace(/[.+^${}()|\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$');
}

function caseFiles(argv) {
    let files = [];
    const args = argv.length ? argv : [process.env.ATTACK_DIR || join(HERE, '..', 'attacks')];
    for (const a of args) {
        const p = resolve(a);
        if (statSync(p).isDirectory())
            files.push(...readdirSync(p).filter((f) => /^(net|res|esc|out|egr|pkg|tools)-[A-Za-z0-9_.-]+\.(py|js|sh)$/.test(f)).map((f) => join(p, f)));
        else files.push(p);
    }
    const globs = (process.env.ATTACK_CASES || '').split(/[\s,]+/).filter(Boolean).map(globRe);
    if (globs.length) files = files.filter((f) => globs.some((re) => re.test(basename(f)) || re.test(caseName(f))));
    return files.sort((a, b) => (basename(a) < basename(b) ? -1 : basename(a) > basename(b) ? 1 : 0));
}

// Issue 42: a case's language by its extension (.py, .js, .sh), its comments' prefix, its name.
const LANGS = { '.py': ['python', '#'], '.js': ['javascript', '//'], '.sh': ['bash', '#'] };
function caseLang(file) {
    return LANGS[extname(file)] ?? LANGS['.py'];
}
function caseName(file) {
    return basename(file, extname(file));
}

function unescape(s) {
    return s.replace(/\\(n|t|r|\\)/g, (_, c) => ({ n: '\n', t: '\t', r: '\r', '\\': '\\' })[c]);
}

// The header: leading `# key: value` lines (blank comment lines allowed); stops at the first
// line that is not a comment.
function parseCase(file) {
    const text = readFileSync(file, 'utf8');
    const [language, prefix] = caseLang(file);
    const h = { file, name: caseName(file), language, text, checks: [], needs: [], after: [], errors: [] };
    for (const line of text.split('\n')) {
        // A bash case's "#!" line, if any, is not a header line.
        if (line.startsWith('#!') && language === 'bash') continue;
        if (!line.startsWith(prefix)) break;
        const m = /^(?:#|\/\/)\s*([a-z-]+):\s?(.*)$/.exec(line);
        if (!m) continue;
        const [, key, value] = m;
        if (!KEYS.has(key)) {
            h.errors.push(`unknown header key "${key}"`);
            continue;
        }
        if (key === 'check') h.checks.push(value.trim());
        else if (key === 'needs') h.needs.push(...value.split(/[\s,]+/).filter(Boolean));
        else if (key === 'after') h.after.push(...value.split(',').map((s) => s.trim()).filter(Boolean));
        else if (key in h) h.errors.push(`header key "${key}" given twice`);
        else h[key] = key === 'stdin' ? value : value.trim();
    }
    for (const k of ['attack', 'expect']) if (!h[k]) h.errors.push(`no "# ${k}:" line`);
    if (!h.checks.length) h.errors.push('no "# check:" line');
    for (const a of h.after) if (!AFTER_CHECKS.has(a)) h.errors.push(`unknown after-check "${a}"`);
    for (const k of ['timeout', 'stdin-bytes', 'code-bytes', 'files-bytes'])
        if (k in h && !/^\d+$/.test(h[k])) h.errors.push(`"# ${k}:" is not a number`);
    if ('files' in h) {
        try {
            h.filesValue = JSON.parse(h.files);
        } catch {
            h.errors.push('"# files:" is not JSON');
        }
    }
    if ('files' in h && 'files-bytes' in h) h.errors.push('"# files:" and "# files-bytes:" together');
    if ('packages' in h) {
        try {
            h.packagesValue = JSON.parse(h.packages);
        } catch {
            h.errors.push('"# packages:" is not JSON');
        }
    }
    return h;
}

async function placeholders(text = '') {
    const env = process.env;
    const v = {
        TESTHOST4: env.ATTACK_TESTHOST4,
        TESTHOST6: env.ATTACK_TESTHOST6,
        TESTPORT: env.ATTACK_TESTPORT,
        HOSTPORT: env.ATTACK_HOSTPORT,
        ABSTRACT: env.ATTACK_ABSTRACT,
    };
    // Local sessions are served by mcp-exec-stdio.service, HTTP ones by mcp-exec.service.
    const out = await run('systemctl', ['show', '-p', 'MainPID', '--value', 'mcp-exec-stdio.service', 'mcp-exec.service',
        'mcp-exec-broker.service']);
    const [stdio, http, br] = out.stdout.split('\n').map((x) => (x && x !== '0' ? x : undefined));
    v.FRONTEND_PID = stdio ?? http;
    v.BROKER_PID = br;
    // The broker exits when idle (socket activation brings it back): start it for a case that
    // needs its pid.
    if (!v.BROKER_PID && text.includes('@BROKER_PID@')) {
        await run('systemctl', ['start', 'mcp-exec-broker.service']);
        const o = await run('systemctl', ['show', '-p', 'MainPID', '--value', 'mcp-exec-broker.service']);
        v.BROKER_PID = o.stdout.trim() && o.stdout.trim() !== '0' ? o.stdout.trim() : undefined;
    }
    // The running systemd's major version: what the sandbox has depends on it (PrivatePIDs= from 257).
    if (text.includes('@SYSTEMD_VERSION@')) {
        const o = await run('systemctl', ['show', '-p', 'Version', '--value']);
        const m = /^(\d+)/.exec(o.stdout.trim());
        v.SYSTEMD_VERSION = m ? m[1] : undefined;
    }
    return v;
}

// The code to send, or throws with the reason.
function buildArgs(c, ph) {
    let code = c.text.replace(/@([A-Z0-9_]+)@/g, (m, k) => {
        if (!(k in ph)) throw new Error(`unknown placeholder ${m}`);
        if (ph[k] === undefined || ph[k] === '') throw new Error(`placeholder ${m} has no value (run through tests/integration/sandbox/test-attacks.sh)`);
        return ph[k];
    });
    if ('code-bytes' in c) {
        const n = Number(c['code-bytes']);
        const prefix = caseLang(c.file)[1];
        const pad = n - Buffer.byteLength(code) - 1 - prefix.length;
        if (pad < 0) throw new Error(`code-bytes ${n} is smaller than the code`);
        code += '\n' + prefix + 'x'.repeat(pad);
    }
    const args = { code, timeout_s: Number(c.timeout ?? 10) };
    if (c.language !== 'python') args.language = c.language;
    if ('stdin' in c) args.stdin = unescape(c.stdin);
    if ('stdin-bytes' in c) {
        const n = Number(c['stdin-bytes']);
        const head = 'mcpcanarystdin';
        if (n < head.length + 1) throw new Error('stdin-bytes too small');
        args.stdin = head + 'x'.repeat(n - head.length - 1) + '\n';
    }
    if ('files' in c) args.files = c.filesValue;
    if ('network' in c) args.network = c.network;
    if ('packages' in c) args.packages = c.packagesValue;
    if ('files-bytes' in c)
        args.files = [{ name: 'big.bin', content: Buffer.alloc(Number(c['files-bytes']), 0x61).toString('base64'), encoding: 'base64' }];
    return args;
}

// ---- box-side helpers -------------------------------------------------------------------------

function run(cmd, args) {
    return new Promise((res) =>
        execFile(cmd, args, { maxBuffer: 16 << 20 }, (err, stdout, stderr) => res({ err, stdout: stdout || '', stderr: stderr || '' })),
    );
}

// Idle warm units of the pool (MCP_EXEC_POOL_SIZE) are no leftovers: they wait for the next run.
const WARM_IDLE = 'mcp-exec warm unit ('; // "(starting)", "(idle)" or "(spare)"

async function listRunUnits() {
    const o = await run('systemctl', ['list-units', '--all', '--plain', '--no-legend', '--no-pager', 'mcp-exec-run-*']);
    return o.stdout.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('mcp-exec-run-'));
}

async function runUnits() {
    return (await listRunUnits()).filter((l) => !l.includes(WARM_IDLE)).map((l) => l.split(/\s+/)[0]);
}

async function warmIdleUnits() {
    return new Set((await listRunUnits()).filter((l) => l.includes(WARM_IDLE)).map((l) => l.split(/\s+/)[0]));
}

// Processes of dynamic uids, but those in the cgroup of an idle warm unit (warm: a Set of names)
// and those of egressd, the tools gateway and its upstreams.
function dynProcs(warm = new Set()) {
    const found = [];
    for (const p of readdirSync('/proc')) {
        if (!/^\d+$/.test(p)) continue;
        let st;
        try {
            st = readFileSync(`/proc/${p}/status`, 'utf8');
        } catch {
            continue;
        }
        const uid = Number(/^Uid:\s+(\d+)/m.exec(st)?.[1]);
        if (uid >= DYN_UID_MIN && uid <= DYN_UID_MAX) {
            let cmd = '', cg = '';
            try {
                cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
                cg = readFileSync(`/proc/${p}/cgroup`, 'utf8');
            } catch {}
            const unit = /mcp-exec-run-[0-9a-f]+\.service/.exec(cg)?.[0];
            if (unit && warm.has(unit)) continue;
            // egressd (a dynamic user too) stays until idle; no run's process is in its cgroup.
            if (/\/mcp-exec-egress\.service$/m.test(cg)) continue;
            // So do the tools gateway and its upstream servers' instances (code mode).
            if (/\/mcp-exec-(tools|upstream-[a-z0-9_]+@[^/]*)\.service$/m.test(cg)) continue;
            found.push(`${p} uid=${uid} ${cmd.slice(0, 80)}`);
        }
    }
    return found;
}

// Files of dynamic uids in the places a run could conceivably write to.
async function dynFiles() {
    const o = await run('find', ['/tmp', '/var/tmp', '/dev/shm', '/run', '/var/lib/private', '/var/cache/private',
        '/var/log/private', '-xdev', '-uid', `+${DYN_UID_MIN - 1}`, '-uid', `-${DYN_UID_MAX + 1}`, '-print']);
    // A code-mode upstream instance's credentials (LoadCredential=, its own dynamic user): systemd's
    // while the instance lives, as its process is (dynProcs).
    return o.stdout.split('\n').filter((f) => f && !/^\/run\/credentials\/mcp-exec-upstream-[a-z0-9_]+@[^/]*\.service(\/|$)/.test(f));
}

function logSizes(files) {
    return files.map((f) => {
        try {
            return statSync(f).size;
        } catch {
            return -1;
        }
    });
}

function logTail(f, from) {
    try {
        return readFileSync(f).subarray(Math.max(0, from)).toString('utf8');
    } catch (e) {
        return String(e);
    }
}

// True if no listener log grew since `before` (sizes); else says what was heard.
async function listenersSilent(listenLogs, before, failures) {
    await sleep(300);
    const after = logSizes(listenLogs);
    const heard = listenLogs.filter((f, i) => after[i] !== before[i]);
    for (const f of heard) failures.push(`listener ${basename(f)} heard: ${short(logTail(f, before[listenLogs.indexOf(f)]).trim(), 300)}`);
    return heard.length === 0;
}

// Control of the listeners-silent check itself: a datagram sent from here (the box, no sandbox)
// to each listener must make it report every log as not silent.
async function selfTestListeners(listenLogs, ph) {
    const dgram = await import('node:dgram');
    const targets = [[ph.TESTHOST4, ph.TESTPORT], [ph.TESTHOST6, ph.TESTPORT], ['127.0.0.1', ph.HOSTPORT], ['::1', ph.HOSTPORT]]
        .filter(([h, p]) => h && p);
    const before = logSizes(listenLogs);
    for (const [h, p] of targets) {
        const sock = dgram.createSocket(h.includes(':') ? 'udp6' : 'udp4');
        await new Promise((res) => sock.send('selftest', Number(p), h, () => res()));
        sock.close();
    }
    const why = [];
    const silent = await listenersSilent(listenLogs, before, why);
    const grown = logSizes(listenLogs).filter((n, i) => n !== before[i]).length;
    return { ok: !silent && grown === listenLogs.length, detail: `${targets.length} datagrams, ${grown}/${listenLogs.length} logs grew` };
}

// Control of the leftover checks: a file and a process of a dynamic uid and an mcp-exec-run-* unit,
// made here on purpose, must each be found, and be gone again afterwards.
async function selfTestLeftovers() {
    const uid = String(DYN_UID_MAX - 7);
    const file = '/run/mcpatk-selftest-leftover';
    const unit = `mcp-exec-run-selftest${process.pid}.service`;
    const found = {};
    writeFileSync(file, '');
    const { chownSync, unlinkSync } = await import('node:fs');
    chownSync(file, Number(uid), Number(uid));
    const { spawn } = await import('node:child_process');
    const child = spawn('setpriv', ['--reuid', uid, '--regid', uid, '--clear-groups', 'sleep', '60'], { stdio: 'ignore' });
    await run('systemd-run', ['--quiet', `--unit=${unit}`, '--collect', 'sleep', '60']);
    await sleep(200);
    try {
        found.file = (await dynFiles()).includes(file);
        found.process = dynProcs().some((p) => p.startsWith(`${child.pid} `) || p.includes(`uid=${uid}`));
        found.unit = (await runUnits()).includes(unit);
    } finally {
        unlinkSync(file);
        child.kill('SIGKILL');
        await run('systemctl', ['stop', unit]);
    }
    await sleep(200);
    const gone = !(await dynFiles()).includes(file) && !(await runUnits()).includes(unit) && !dynProcs().some((p) => p.includes(`uid=${uid}`));
    return { ok: found.file && found.process && found.unit && gone, detail: `found ${JSON.stringify(found)}, gone afterwards: ${gone}` };
}

// ---- MCP --------------------------------------------------------------------------------------

let session = null;
let sessionNo = 0;

async function connect() {
    const transport = process.env.ATTACK_TRANSPORT === 'http'
        ? new StreamableHTTPClientTransport(new URL(process.env.ATTACK_HTTP_URL || 'http://127.0.0.1:8080/mcp'))
        : new StdioClientTransport({ command: MCP_EXEC, args: STDIO_ARGS, stderr: 'inherit' });
    const client = new Client({ name: 'mcp-exec-attacks', version: '1.0.0' }, { capabilities: {} });
    const s = { client, transport, closed: false, errors: [] };
    // Protocol-level trouble (unknown response ids, unparsable lines) lands here.
    client.onerror = (e) => s.errors.push(e?.message || String(e));
    await client.connect(transport);
    const onclose = transport.onclose;
    transport.onclose = () => {
        s.closed = true;
        onclose?.();
    };
    // The v1 client validates structuredContent against the outputSchema it learned here.
    await client.listTools();
    sessionNo++;
    return s;
}

async function ensureSession() {
    if (session && !session.closed) return session;
    if (session) log(`attacks: the session closed; opening a new one`);
    session = await connect();
    return session;
}

// A call that gets no answer leaves the session in an unknown state: it is closed, and the next
// call opens a new one, so that one wedged case does not take the rest with it.
// ATTACK_WAIT_WARM=1: every run on a warm unit of the pool; before each call, wait until one of
// its language's pool is ready (the broker marks it "(idle)", and a bash or javascript one with
// its language after it; a language's pool starts at its first call, so that call waits for the
// pool's first unit: the first call itself goes cold unless one is already there).
async function waitWarm(language) {
    const want = 'mcp-exec warm unit (idle)' + (language && language !== 'python' ? ' ' + language : '');
    const deadline = Date.now() + 60000;
    while (Date.now() < deadline) {
        if ((await listRunUnits()).some((l) => l.endsWith(want))) return;
        await sleep(100);
    }
    throw new Error(`no warm unit of ${language || 'python'} became ready within 60 s`);
}

async function callExec(args, timeoutMs) {
    if (process.env.ATTACK_WAIT_WARM) await waitWarm(args.language);
    const s = await ensureSession();
    try {
        return await s.client.callTool({ name: 'exec', arguments: args }, undefined, { timeout: timeoutMs });
    } catch (e) {
        if (/timed out/i.test(e?.message || '')) {
            s.closed = true;
            s.client.close().catch(() => {});
        }
        throw e;
    }
}

// ---- the always-checks ------------------------------------------------------------------------

// Checks 1 and 2 share one run (one run less per case): it prints 6*7 first, then what it sees.
const CLEAN_CODE = `print(6*7)
import json, os
me = str(os.getpid())
seen = {}
for d in ("/tmp", "/dev/shm", "/var/tmp"):
    try:
        seen[d] = sorted(os.listdir(d))
    except OSError as e:
        seen[d] = "error: %s" % e
seen["others"] = sorted(p for p in os.listdir("/proc") if p.isdigit() and p != me)
print(json.dumps(seen))
`;

async function alwaysChecks(failures) {
    const checks = {};
    // 1. the service still answers; 2. the next run is clean
    try {
        const res = await callExec({ code: CLEAN_CODE, timeout_s: 10 }, 30000);
        const sc = res.structuredContent;
        checks.alive = res.isError !== true && typeof sc?.stdout === 'string' && sc.stdout.startsWith('42\n');
        if (!checks.alive) failures.push(`alive: print(6*7) gave ${short(JSON.stringify(res), 300)}`);
        let seen = null;
        try {
            seen = sc?.exit_code === 0 ? JSON.parse(sc.stdout.slice(3)) : null;
        } catch {}
        const dirty = !seen
            ? ['the probe failed: ' + short(JSON.stringify(res), 300)]
            : Object.entries(seen).filter(([, v]) => !Array.isArray(v) || v.length).map(([k, v]) => `${k}: ${short(JSON.stringify(v), 200)}`);
        const files = await dynFiles();
        if (files.length) dirty.push(`files of dynamic uids in the box: ${short(files.join(' '), 300)}`);
        checks.clean = dirty.length === 0;
        if (!checks.clean) failures.push(`clean: ${dirty.join('; ')}`);
    } catch (e) {
        checks.alive = checks.clean = false;
        failures.push(`alive and clean: ${e.message}`);
    }
    // 3. no run unit (any state) within 15 s, no process of a dynamic uid
    const deadline = Date.now() + 15000;
    let units = await runUnits();
    let procs = dynProcs(await warmIdleUnits());
    while ((units.length || procs.length) && Date.now() < deadline) {
        await sleep(200);
        units = await runUnits();
        procs = dynProcs(await warmIdleUnits());
    }
    checks.no_leftovers = !units.length && !procs.length;
    if (units.length) failures.push(`units left after 15 s: ${units.join(' ')}`);
    if (procs.length) failures.push(`dynamic-uid processes left after 15 s: ${short(procs.join('; '), 300)}`);
    return checks;
}

// ---- reporting --------------------------------------------------------------------------------

// Canaries never go into the results or the log in clear.
function redact(s) {
    return String(s).replace(/mcpcanary[a-z0-9]*/gi, '<canary>');
}

function short(s, max = 160) {
    s = String(s);
    return s.length > max ? s.slice(0, max) + '…' : s;
}

function observe(res, err) {
    if (err) return `client error: ${err}`;
    if (!res) return 'no result';
    if (res.isError) return `isError: ${(res.content || []).map((c) => c.text).join(' ')}`;
    const r = res.structuredContent;
    if (!r) return 'no structuredContent';
    const flags = ['timed_out', 'truncated', 'oom_killed'].filter((k) => r[k]).join(' ');
    const blocked = (r.stdout.match(/BLOCKED/g) || []).length;
    const escaped = r.stdout.split('\n').filter((l) => l.includes('ESCAPED'));
    let s = `exit=${r.exit_code}${r.signal ? ' ' + r.signal : ''}${flags ? ' ' + flags : ''}`;
    if (blocked || escaped.length) s += ` BLOCKED×${blocked} ESCAPED×${escaped.length}`;
    s += ` out=${r.stdout.length}c err=${r.stderr.length}c`;
    const first = escaped[0] ?? r.stdout.split('\n').find((l) => l.trim()) ?? r.stderr.split('\n').find((l) => l.trim()) ?? '';
    if (first) s += ` | ${JSON.stringify(first.slice(0, 100)).slice(1, -1)}`;
    return s;
}

// ---- main -------------------------------------------------------------------------------------

async function runCase(c, ph, listenLogs, haveNeeds) {
    const t0 = Date.now();
    const failures = [...c.errors];
    const checks = {};
    let res = null;
    let err = null;

    for (const n of c.needs) if (!haveNeeds.has(n)) failures.push(`needs "${n}", which the wrapper did not set up`);

    let args = null;
    if (!failures.length) {
        try {
            args = buildArgs(c, ph);
        } catch (e) {
            failures.push(e.message);
        }
    }
    const silent = c.after.includes('listeners-silent');
    if (silent && !listenLogs.length) failures.push('listeners-silent: no listener logs (ATTACK_LISTEN_LOGS)');
    const before = logSizes(listenLogs);

    // Egress cases: what the test internet's DNS stub and servers logged during the case.
    const egressLogs = (process.env.ATTACK_EGRESS_LOGS || '').split(',').filter(Boolean);
    const egressBefore = logSizes(egressLogs);
    if (args) {
        try {
            res = await callExec(args, (args.timeout_s + 30) * 1000);
        } catch (e) {
            err = e?.message || String(e);
        }
        const r = res?.structuredContent ?? null;
        // Connections the run's end cuts are logged by the servers a moment later; a case that
        // judges what happens after the run's end (egress-settle) waits longer.
        if (egressLogs.length) await sleep(c.after.includes('egress-settle') ? 3000 : 300);
        const [dns = '', http = ''] = egressLogs.map((f, i) => logTail(f, egressBefore[i]));
        const net = { dns, http };
        checks.check = true;
        for (const expr of c.checks) {
            let ok;
            try {
                // Placeholders in a check too (a version's own expectation): buildArgs() vouched for them.
                const body = expr.replace(/@([A-Z0-9_]+)@/g, (m, k) => (ph[k] === undefined ? m : ph[k]));
                ok = !!new Function('r', 'res', 'err', 'net', `"use strict"; return (${body});`)(r, res, err, net);
            } catch (e) {
                ok = false;
                failures.push(`check threw ${e.name}: ${e.message}: ${expr}`);
            }
            if (!ok) {
                checks.check = false;
                failures.push(`check false: ${expr}`);
            }
        }
        if (silent) checks.listeners_silent = await listenersSilent(listenLogs, before, failures);
    }
    Object.assign(checks, await alwaysChecks(failures));
    // Nothing the run printed may reach the client as protocol (an extra response, a request).
    const s = session;
    checks.protocol_clean = !s || s.errors.length === 0;
    if (s?.errors.length) failures.push(`client protocol errors: ${short(s.errors.join('; '), 300)}`);
    if (s) s.errors = [];
    const pass = failures.length === 0 && Object.values(checks).every(Boolean) && 'check' in checks;
    const r = res?.structuredContent;
    return {
        case: c.name,
        attack: c.attack ?? '',
        expect: c.expect ?? '',
        observed: redact(short(observe(res, err), 200)),
        pass,
        checks,
        failures: failures.map((f) => redact(short(f, 600))),
        ms: Date.now() - t0,
        stdout_head: r ? redact(short(r.stdout, 1000)) : null,
        stderr_head: r ? redact(short(r.stderr, 1000)) : null,
    };
}

async function main() {
    const argv = [];
    for (const a of process.argv.slice(2)) {
        const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/s.exec(a);
        if (m) process.env[m[1]] = m[2];
        else argv.push(a);
    }
    if (argv.some((a) => a === '-h' || a === '--help')) {
        log('usage: node attacks.mjs [CASE.py|DIR]...   (env: ATTACK_DIR, ATTACK_CASES, ATTACK_RESULTS, ...)');
        process.exit(2);
    }
    let files;
    try {
        files = caseFiles(argv);
    } catch (e) {
        log(`attacks: ${e.message}`);
        process.exit(2);
    }
    if (!files.length) {
        log('attacks: no case files');
        process.exit(2);
    }
    const out = process.env.ATTACK_RESULTS || join(STATE, 'attack-results.jsonl');
    writeFileSync(out, '');
    const listenLogs = (process.env.ATTACK_LISTEN_LOGS || '').split(',').filter(Boolean);
    const haveNeeds = new Set((process.env.ATTACK_NEEDS || '').split(',').map((s) => s.trim()).filter(Boolean));

    const t0 = Date.now();
    if (listenLogs.length) {
        const st = await selfTestListeners(listenLogs, await placeholders());
        log(`attacks: control of listeners-silent: ${st.ok ? 'ok' : 'FAIL'} (${st.detail})`);
        if (!st.ok) process.exit(1);
    }
    const lt = await selfTestLeftovers();
    log(`attacks: control of the leftover checks: ${lt.ok ? 'ok' : 'FAIL'} (${lt.detail})`);
    if (!lt.ok) process.exit(1);
    try {
        session = await connect();
    } catch (e) {
        log(`attacks: cannot connect: ${e.message}`);
        process.exit(1);
    }
    let failed = 0;
    const budget = Number(process.env.ATTACK_BUDGET_S || 0) * 1000;
    for (const f of files) {
        const c = parseCase(f);
        if (budget && Date.now() - t0 > budget) {
            const row = { case: c.name, attack: c.attack ?? '', expect: c.expect ?? '', observed: 'not run: the time budget ran out',
                pass: false, checks: {}, failures: [`not run: ATTACK_BUDGET_S=${budget / 1000} s used up`], ms: 0 };
            appendFileSync(out, JSON.stringify(row) + '\n');
            failed++;
            log(`attacks: FAIL ${row.case}: ${row.observed}`);
            continue;
        }
        const ph = await placeholders(c.text);
        const row = await runCase(c, ph, listenLogs, haveNeeds);
        appendFileSync(out, JSON.stringify(row) + '\n');
        if (!row.pass) failed++;
        log(`attacks: ${row.pass ? 'ok' : 'FAIL'} ${row.case} (${row.ms} ms): ${row.observed}`);
        for (const why of row.failures) log(`attacks:     ${why}`);
        if (!row.pass && row.stdout_head !== null) {
            log(`attacks:     stdout: ${JSON.stringify(short(row.stdout_head, 600))}`);
            log(`attacks:     stderr: ${JSON.stringify(short(row.stderr_head, 600))}`);
        }
    }
    log(`attacks: ${files.length} cases, ${files.length - failed} passed, ${failed} failed, ${sessionNo} session(s), ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    try {
        await session?.client.close();
    } catch {}
    process.exit(failed ? 1 : 0);
}

main().catch((e) => {
    log(`attacks: ${e?.stack || e}`);
    process.exit(1);
});
