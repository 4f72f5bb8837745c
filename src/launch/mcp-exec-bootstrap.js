// SPDX-License-Identifier: LGPL-2.1-or-later
// mcp-exec-bootstrap.js: the interpreter side of a JavaScript run (issue 42),
// started by the launcher (mcp-exec-launch) inside the run's sandbox before
// any code is known, as `node [flags] mcp-exec-bootstrap.js [--session]`. It
// speaks the protocol of launch-lang.h: fd 0 is the caller's stdin (a memfd,
// filled at "go"), 1 and 2 pipes the launcher relays, 3 the control socket
// ("ready" from us, "go" from the launcher, "done N" from us in a session),
// 4 the code (a memfd, filled at "go"). Code never comes by argv or the
// environment.
//
// One-shot: the program runs as `node FILE` would run it: a CommonJS script
// (require() from /tmp, module, exports), or, when it has top-level await, the
// same script in an async function, or, when it has import/export statements,
// an ES module (from a data: URL; its imports of files and packages resolve
// from /tmp, as for `node /tmp/x.mjs`, where node has module.register():
// 18.19, 20.6 and later, so Debian 12's 18.20 and 13's 20.19).
// The exit status is node's: an uncaught exception or unhandled rejection
// prints the error and exits 1, process.exit(n) exits n.
//
// Session (--session): calls run one after the other in one global scope,
// through the repl module's evaluator (its top-level await rewriting: `let x =
// await f()` declares x for the next call too): a call's let, const, class
// and function declarations are there in the next one, as in node's REPL (and
// as there, declaring the same let or const twice is a SyntaxError). A call
// ends when its code has run (its top-level promise settled): "done 0", "done
// 1" after an uncaught error (printed to stderr), "done N" for
// process.exit(N) (which ends the call, not the session), "done -2" when the
// launcher interrupted it (SIGINT: a busy loop is broken, a pending await is
// abandoned). What a call left running (timers, servers) goes on; an error it
// throws later is printed and ends nothing but the call it happens in.
// Each call's stdin is fd 0 from its start: fs.readFileSync(0) reads it;
// process.stdin is one stream for the whole session, over after its end.
//
// Our code only until the program starts: from then on this process is the
// program's, and the launcher trusts nothing it says but "done".
'use strict';

const fs = require('fs');
const net = require('net');
const path = require('path');
const Module = require('module');
const url = require('url');
const util = require('util');
const vm = require('vm');

const CONTROL_FD = 3;
const CODE_FD = 4;
const SESSION = process.argv.slice(2).includes('--session');
const NODE = process.argv[0];
// The program's name in stack traces and __filename; /tmp is its directory.
const PROGRAM = path.join(process.cwd(), '<program>');

// The code, read by path: a description of our own at offset 0.
function readCode() {
        let text = fs.readFileSync(`/proc/self/fd/${CODE_FD}`, 'utf8');
        if (text.charCodeAt(0) === 0xfeff)
                text = text.slice(1);
        // A #! line is a comment to node; kept as one, so line numbers stay.
        if (text.startsWith('#!'))
                text = '//' + text.slice(2);
        return text;
}

const CJS_PARAMS = ['exports', 'require', 'module', '__filename', '__dirname'];
const AWAIT_RE = /await is only valid in async functions/;
const ESM_RE = /Cannot use import statement|Unexpected token 'export'|Cannot use 'import\.meta'/;

function compileError(source) {
        try {
                vm.compileFunction(source, CJS_PARAMS, { filename: PROGRAM });
                return null;
        } catch (e) {
                return e instanceof SyntaxError ? e : null;
        }
}

// "cjs", "cjs-async" (top-level await) or "esm". Only compiled here, never
// run: a SyntaxError the program throws when it runs is the program's. A
// program that compiles in none of them runs as "cjs", which throws its
// SyntaxError as node would.
function classify(source) {
        let e = compileError(source);
        if (!e)
                return 'cjs';
        if (AWAIT_RE.test(e.message)) {
                e = compileError(asyncBody(source));
                if (!e)
                        return 'cjs-async';
        }
        return ESM_RE.test(e.message) ? 'esm' : 'cjs';
}

// The script as the body of an async function whose promise the module
// wrapper returns; on the first line, so line numbers stay.
function asyncBody(source) {
        return `return (async () => {${source}\n})();`;
}

// The specifiers an ES module names in import and export statements and in
// import() with a string: any but a built-in needs the resolve hook below.
const SPECIFIER_RE = /\b(?:from|import)\s*\(?\s*(['"])([^'"\n]+)\1/g;

function namesNonBuiltin(source) {
        for (const m of source.matchAll(SPECIFIER_RE)) {
                const s = m[2];
                if (!s.startsWith('node:') && !Module.builtinModules.includes(s))
                        return true;
        }
        return false;
}

// A data: URL has no directory: node resolves nothing but built-ins and
// file: URLs from it. A resolve hook makes the program's directory (/tmp) the
// base of its imports, as it is for a CommonJS program's require(). Hooks run
// on a thread of their own, which costs about 30 ms: only for a program that
// imports a file or a package. Without module.register() (before 18.19) the
// import fails as node says.
function registerResolveHook() {
        if (typeof Module.register !== 'function')
                return;
        const parent = JSON.stringify(url.pathToFileURL(PROGRAM).href);
        const hook = `export async function resolve(specifier, context, next) {
        if (context.parentURL && context.parentURL.startsWith('data:'))
                context = { ...context, parentURL: ${parent} };
        return next(specifier, context);
}`;
        Module.register('data:text/javascript,' + encodeURIComponent(hook));
}

function runOnce(source) {
        const kind = classify(source);

        process.argv = [NODE, PROGRAM];
        if (kind === 'esm') {
                const data = 'data:text/javascript;base64,' +
                        Buffer.from(`${source}\n//# sourceURL=${PROGRAM}\n`).toString('base64');
                if (namesNonBuiltin(source))
                        registerResolveHook();
                // A rejection is an unhandled one: node prints it and exits 1.
                import(data);
                return;
        }
        const m = new Module(PROGRAM, null);
        m.id = '.';
        m.filename = PROGRAM;
        m.paths = Module._nodeModulePaths(path.dirname(PROGRAM));
        Module._cache[PROGRAM] = m;
        process.mainModule = m;
        // Thrown synchronously, or rejected (top-level await): uncaught either
        // way, as in `node FILE`.
        m._compile(kind === 'cjs' ? source : asyncBody(source), PROGRAM);
        m.loaded = true;
}

// The control socket: lines in, "ready" and "done N" out.
function control(onLine, onEnd) {
        const ctl = new net.Socket({ fd: CONTROL_FD, readable: true, writable: true });
        let buf = '';

        ctl.setEncoding('utf8');
        ctl.on('data', (d) => {
                buf += d;
                for (let i; (i = buf.indexOf('\n')) >= 0;) {
                        const line = buf.slice(0, i);
                        buf = buf.slice(i + 1);
                        onLine(line);
                }
                if (buf.length > 4096)
                        onEnd();
        });
        ctl.on('end', onEnd);
        ctl.on('error', onEnd);
        return ctl;
}

function oneShot() {
        let started = false;
        const ctl = control((line) => {
                if (started || line !== 'go')
                        return;
                started = true;
                const source = readCode();
                fs.closeSync(CODE_FD);
                // No child of the program holds the launcher's socket.
                ctl.removeAllListeners('data');
                ctl.destroy();
                runOnce(source);
        }, () => {
                if (!started)
                        process.exit(0);
        });
        ctl.write('ready\n');
}

// ---- sessions -------------------------------------------------------------

class CallExit {
        constructor(code) {
                this.code = code;
        }
}

// Our frames (the repl's evaluator, vm, domains, this file) are not the
// program's: left out of what a session call prints.
function printError(e) {
        let text;

        if (e instanceof Error && typeof e.stack === 'string') {
                const lines = e.stack.split('\n');
                const cut = lines.findIndex((l) => /^\s+at /.test(l) &&
                                            /mcp-exec-bootstrap\.js|node:(vm|repl|domain)\b/.test(l));
                text = (cut < 0 ? lines : lines.slice(0, cut)).join('\n');
        } else
                text = util.inspect(e);
        try {
                fs.writeSync(2, `Uncaught ${text}\n`);
        } catch {
                // stderr gone: nothing to tell
        }
}

function session() {
        const repl = require('repl');
        const domain = require('domain');
        const { PassThrough, Writable } = require('stream');
        const realExit = process.exit;
        const sink = new Writable({ write(chunk, enc, cb) { cb(); } });
        let n = 0, current = null, ctl;

        function finish(call, status) {
                if (current !== call)
                        return;
                current = null;
                process.exit = realExit;
                process.exitCode = undefined;
                ctl.write(`done ${status}\n`);
        }

        function statusOf(e) {
                if (e instanceof CallExit)
                        return e.code;
                if (e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED')
                        return -2;
                printError(e);
                return 1;
        }

        function call() {
                const source = readCode();
                const me = { n: ++n };
                // A domain per call: what a call's timers throw later goes
                // to its own domain, never ends another call.
                const d = domain.create();
                const srv = repl.start({
                        input: new PassThrough(), output: sink, prompt: '', terminal: false,
                        useGlobal: true, ignoreUndefined: true, breakEvalOnSigint: true, domain: d,
                });

                d.removeAllListeners('error');
                d.on('error', (e) => {
                        if (current === me)
                                finish(me, statusOf(e));
                        else if (!(e instanceof CallExit))
                                printError(e);
                });
                current = me;
                // Our SIGINT listener would take the signal from the
                // evaluator's watchdog (node then dies of it): none while the
                // code runs synchronously, ours again once it awaits.
                process.removeListener('SIGINT', onInterrupt);
                process.exit = (code) => {
                        const c = code === undefined ? process.exitCode ?? 0 : code;
                        if (current)
                                throw new CallExit(Number(c) & 0xff);
                        // After its call: the program leaves, the session with it.
                        realExit(c);
                };
                srv.eval(source, globalThis, `<call ${me.n}>`, (err) => {
                        if (err)
                                finish(me, statusOf(err));
                        else
                                finish(me, Number(process.exitCode ?? 0) & 0xff);
                });
                process.on('SIGINT', onInterrupt);
                srv.close();
        }

        // The launcher's interrupt: a busy loop is broken by the evaluator
        // (breakEvalOnSigint); a pending await is abandoned here. Between
        // calls it is late for the call that just ended: ignored.
        function onInterrupt() {
                if (current)
                        finish(current, -2);
        }
        process.on('SIGINT', onInterrupt);
        process.on('uncaughtException', (e) => {
                if (current)
                        finish(current, statusOf(e));
                else if (!(e instanceof CallExit))
                        printError(e);
        });
        ctl = control((line) => {
                if (line === 'go' && !current)
                        call();
        }, () => realExit(0));
        ctl.write('ready\n');
}

// A run with a network: node's http, https and fetch() through the proxy its
// environment names, as curl and Python reach it (mcp-exec-proxy.js).
if (process.env.http_proxy || process.env.https_proxy)
        require(path.join(__dirname, 'mcp-exec-proxy.js')).useEnvProxy(process.env);

if (SESSION)
        session();
else
        oneShot();
