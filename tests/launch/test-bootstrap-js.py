#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test-bootstrap-js BOOTSTRAP [NODE]: the JavaScript bootstrap
(src/launch/mcp-exec-bootstrap.js) driven as the launcher drives it
(src/launch/launch-lang.h): stdin and code in memfds at fds 0 and 4, stdout
and stderr pipes, the control socket at fd 3; "ready", "go", "done N".
One-shot runs must end as `node FILE` ends (status, stderr); a session must
keep its global scope across calls, top-level await included. Skipped (77)
without node. The sandbox around it is the integration tests'."""
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

BOOTSTRAP = os.path.abspath(sys.argv[1])
NODE = sys.argv[2] if len(sys.argv) > 2 else shutil.which("node") or shutil.which("nodejs")
if not NODE:
    print("no node: skipped")
    sys.exit(77)
WORK = tempfile.mkdtemp(prefix="mcp-exec-bootstrap-js.")
HAS_REGISTER = subprocess.run([NODE, "-p", "typeof require('module').register"], capture_output=True,
                              text=True).stdout.strip() == "function"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def reader(fd, out):
    while True:
        b = os.read(fd, 65536)
        if not b:
            break
        out.append(b)


class Interp:
    """node BOOTSTRAP [--session] with the fds of launch-lang.h."""

    def __init__(self, session=False, env=None):
        self.stdin = os.memfd_create("stdin", os.MFD_CLOEXEC)
        self.code = os.memfd_create("code", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        self.ctl, child_ctl = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        fds = {0: self.stdin, 1: out_w, 2: err_w, 3: child_ctl.fileno(), 4: self.code}

        def setup():
            # Place each at its number, through copies above them all.
            tmp = {n: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for n, fd in fds.items()}
            for n in fds:
                os.dup2(tmp[n], n)
                os.close(tmp[n])
            os.setpgid(0, 0)

        argv = [NODE, BOOTSTRAP] + (["--session"] if session else [])
        env = {"PATH": "/usr/bin:/bin", "HOME": WORK, "LANG": "C.UTF-8", **(env or {})}
        self.proc = subprocess.Popen(argv, preexec_fn=setup, cwd=WORK, env=env, close_fds=False)
        child_ctl.close()
        os.close(out_w)
        os.close(err_w)
        self.out, self.err = [], []
        self.readers = [threading.Thread(target=reader, args=(out_r, self.out)),
                        threading.Thread(target=reader, args=(err_r, self.err))]
        for t in self.readers:
            t.start()
        self.buf = b""
        self.ctl.settimeout(30)

    def line(self):
        while b"\n" not in self.buf:
            b = self.ctl.recv(4096)
            if not b:
                return None
            self.buf += b
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def go(self, code, stdin=b""):
        for fd, data in ((self.stdin, stdin), (self.code, code.encode())):
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
        os.lseek(self.stdin, 0, os.SEEK_SET)
        self.ctl.sendall(b"go\n")

    def output(self):
        """What came so far (a session's pipes stay open)."""
        time.sleep(0.05)
        return b"".join(self.out).decode(), b"".join(self.err).decode()

    def take(self):
        out, err = self.output()
        self.out.clear()
        self.err.clear()
        return out, err

    def wait(self):
        status = self.proc.wait(30)
        for t in self.readers:
            t.join(10)
        return status, b"".join(self.out).decode(), b"".join(self.err).decode()


# What a child of the program has open beyond its stdio.
CHILD_FDS = ("console.log(require('child_process').execSync(\n"
             "  'for f in /proc/self/fd/*; do [ ${f##*/} -gt 2 ] && readlink $f; done; true').toString())")


def run(code, stdin=b"", env=None):
    i = Interp(env=env)
    check(i.line() == "ready", "one-shot: ready before any code")
    i.go(code, stdin)
    # After "go" the bootstrap closes its end: EOF here.
    check(i.line() is None, "one-shot: the control socket is closed once the program runs")
    return i.wait()


def one_shot():
    st, out, err = run("console.log('hello', 6 * 7)")
    check((st, out) == (0, "hello 42\n"), "print: %r %r" % (st, out))
    st, out, err = run("process.exit(3)")
    check(st == 3, "process.exit(3): %r" % st)
    st, out, err = run("process.exitCode = 4; console.log('x')")
    check(st == 4 and out == "x\n", "process.exitCode = 4: %r" % st)
    st, out, err = run("console.log('a');\nthrow new TypeError('boom')")
    check(st == 1 and out == "a\n" and "TypeError: boom" in err and "<program>:2" in err,
          "uncaught exception: status 1, the error and its line on stderr: %r %r" % (st, err))
    st, out, err = run("Promise.reject(new Error('nope'))")
    check(st == 1 and "Error: nope" in err, "unhandled rejection: %r %r" % (st, err))
    st, out, err = run("const x = await new Promise(r => setTimeout(() => r(5), 10));\nconsole.log(x)")
    check((st, out) == (0, "5\n"), "top-level await (CommonJS): %r %r %r" % (st, out, err))
    st, out, err = run("await Promise.resolve();\nthrow new Error('late')")
    check(st == 1 and "Error: late" in err, "top-level await, then a throw: %r %r" % (st, err))
    st, out, err = run("import os from 'node:os';\nconst v = await Promise.resolve(typeof os.cpus);\n"
                       "console.log(v, import.meta.url.startsWith('data:'))")
    check((st, out) == (0, "function true\n"), "ES module with top-level await: %r %r %r" % (st, out, err))
    st, out, err = run("import fs from 'fs';\nthrow new RangeError('esm')")
    check(st == 1 and "RangeError: esm" in err, "ES module's throw: %r %r" % (st, err))
    # An ES module's imports of files resolve from the working directory, where node has
    # module.register() (18.19, 20.6 and later); with an older node they fail as node says.
    with open(os.path.join(WORK, "lib.mjs"), "w") as f:
        f.write("export default 40; export const two = 2;\n")
    os.makedirs(os.path.join(WORK, "sub"), exist_ok=True)
    with open(os.path.join(WORK, "sub", "deep.mjs"), "w") as f:
        f.write("import x from '../lib.mjs'; export const deep = x + 1;\n")
    st, out, err = run("import x, { two } from './lib.mjs';\nimport { deep } from './sub/deep.mjs';\n"
                       "import os from 'node:os';\nconst { two: t } = await import('./lib.mjs');\n"
                       "console.log(x + two, deep, t, typeof os.cpus)")
    if HAS_REGISTER:
        check((st, out) == (0, "42 41 2 function\n"),
              "ES module importing files from its directory: %r %r %r" % (st, out, err))
    else:
        check(st == 1 and "lib.mjs" in err, "ES module importing a file, node without register(): %r %r" % (st, err))
    st, out, err = run("const fs = require('fs'); process.stdout.write(fs.readFileSync(0, 'utf8').toUpperCase())",
                       b"some input\n")
    check((st, out) == (0, "SOME INPUT\n"), "stdin: %r %r %r" % (st, out, err))
    st, out, err = run("let s = ''; process.stdin.on('data', d => s += d).on('end', () => console.log(s.length))",
                       b"x" * 100000)
    check((st, out) == (0, "100000\n"), "stdin as a stream: %r %r %r" % (st, out, err))
    with open(os.path.join(WORK, "helper.js"), "w") as f:
        f.write("module.exports = () => 'helped';\n")
    st, out, err = run("console.log(require('./helper.js')(), require.main === module, __filename,\n"
                       "  process.argv.length)")
    check(st == 0 and out.startswith("helped true ") and "<program>" in out and out.endswith(" 2\n"),
          "require() from the working directory, require.main, __filename, argv: %r %r" % (out, err))
    st, out, err = run("#!/usr/bin/env node\nconsole.log(1)")
    check((st, out) == (0, "1\n"), "a #! line: %r %r" % (st, err))
    st, out, err = run("let x = ;")
    check(st == 1 and "SyntaxError" in err, "syntax error: %r %r" % (st, err))
    st, out, err = run("const t = setTimeout(() => console.log('timer'), 20); console.log('first')")
    check((st, out) == (0, "first\ntimer\n"), "the event loop runs to its end: %r" % out)
    st, out, err = run(CHILD_FDS)
    check(st == 0 and "memfd:code" not in out and "socket:" not in out,
          "a child holds no control socket nor code memfd: %r %r" % (out, err))
    st, out, err = run("process.kill(process.pid, 'SIGKILL')")
    check(st == -signal.SIGKILL, "killed by a signal: %r" % st)

    # Never started: EOF on the control socket before "go" ends it quietly.
    i = Interp()
    check(i.line() == "ready", "ready")
    i.ctl.shutdown(socket.SHUT_WR)
    st, out, err = i.wait()
    check((st, out, err) == (0, "", ""), "EOF before go: exit 0, nothing printed: %r %r %r" % (st, out, err))


def call(i, code, stdin=b""):
    i.go(code, stdin)
    line = i.line()
    out, err = i.take()
    return line, out, err


def sessions():
    i = Interp(session=True)
    check(i.line() == "ready", "session: ready")
    d, out, err = call(i, "let a = 1; const b = await Promise.resolve(2);\nfunction f() { return a + b; }\n"
                          "class K { k() { return 'k'; } }\nvar v = 'v';\nconsole.log('one')")
    check((d, out) == ("done 0", "one\n"), "call 1: %r %r %r" % (d, out, err))
    d, out, err = call(i, "const fs = require('fs'); let path = 'mine';\nconsole.log(typeof fs.readFileSync, path)")
    check((d, out) == ("done 0", "function mine\n"), "declaring names of built-in modules: %r %r %r" % (d, out, err))
    d, out, err = call(i, "console.log(a, b, f(), new K().k(), v)")
    check((d, out) == ("done 0", "1 2 3 k v\n"), "let, const, function, class, var kept: %r %r %r" % (d, out, err))
    d, out, err = call(i, "const r = await new Promise(res => setTimeout(() => res(a + 40), 10));\nconsole.log(r + 1)")
    check((d, out) == ("done 0", "42\n"), "top-level await in a call: %r %r %r" % (d, out, err))
    d, out, err = call(i, "console.log(r)")
    check((d, out) == ("done 0", "41\n"), "a const from an await call: %r %r" % (d, out))
    d, out, err = call(i, "console.log('before'); throw new Error('boom')")
    check(d == "done 1" and out == "before\n" and "Error: boom" in err and "<call 6>" in err
          and "mcp-exec-bootstrap" not in err and "node:repl" not in err,
          "an uncaught error ends the call with 1, our frames left out: %r %r" % (d, err))
    d, out, err = call(i, "await Promise.reject(new TypeError('rejected'))")
    check(d == "done 1" and "TypeError: rejected" in err, "a rejected await: %r %r" % (d, err))
    d, out, err = call(i, "process.exit(7)")
    check(d == "done 7", "process.exit(7) ends the call with 7: %r" % d)
    d, out, err = call(i, "await null; process.exit(9)")
    check(d == "done 9", "process.exit(9) after an await: %r" % d)
    d, out, err = call(i, "process.exitCode = 3")
    check(d == "done 3", "process.exitCode: %r" % d)
    d, out, err = call(i, "console.log(f(), process.exitCode)")
    check((d, out) == ("done 0", "3 undefined\n"), "the session goes on, exit code reset: %r %r" % (d, out))
    d, out, err = call(i, "let a = 5")
    check(d == "done 1" and "SyntaxError" in err, "let declared twice: a SyntaxError, as in node's REPL: %r" % err)
    d, out, err = call(i, "console.log(require('fs').readFileSync(0, 'utf8'))", b"call input")
    check((d, out) == ("done 0", "call input\n"), "each call's stdin: %r %r %r" % (d, out, err))
    d, out, err = call(i, "console.log(require('fs').readFileSync(0, 'utf8'))", b"second")
    check((d, out) == ("done 0", "second\n"), "the next call's stdin: %r %r" % (d, out))

    d, out, err = call(i, CHILD_FDS)
    check(d == "done 0" and "memfd:code" not in out and "socket:" not in out,
          "a call's child holds no control socket nor code memfd: %r %r" % (out, err))

    # A timer of one call that throws during the next one ends neither.
    d, out, err = call(i, "setTimeout(() => { throw new Error('stray'); }, 100); 1")
    check(d == "done 0", "a call that leaves a throwing timer: %r" % d)
    d, out, err = call(i, "await new Promise(r => setTimeout(r, 300)); console.log('whole')")
    check(d == "done 0" and out == "whole\n" and "stray" in err,
          "the stray error is printed, the call it fell into runs to its end: %r %r %r" % (d, out, err))

    # The launcher's interrupt (SIGINT to the group): a busy loop and a
    # pending await end the call with -2; the state stays.
    i.go("globalThis.spun = 1; for (;;) {}")
    time.sleep(0.5)
    os.killpg(i.proc.pid, signal.SIGINT)
    d = i.line()
    i.take()
    check(d == "done -2", "interrupted busy loop: %r" % d)
    i.go("await new Promise(() => {})")
    time.sleep(0.3)
    os.killpg(i.proc.pid, signal.SIGINT)
    d = i.line()
    i.take()
    check(d == "done -2", "interrupted pending await: %r" % d)
    d, out, err = call(i, "console.log(spun, a)")
    check((d, out) == ("done 0", "1 1\n"), "state kept across interrupts: %r %r %r" % (d, out, err))

    # EOF on the control socket: the session ends.
    i.ctl.shutdown(socket.SHUT_WR)
    st, out, err = i.wait()
    check(st == 0, "EOF on the control socket: exit 0: %r" % st)


class Proxy:
    """A stand-in for the launcher's egress proxy on loopback: it answers an
    absolute-form request itself ("proxied METHOD URL BODYLENGTH") and refuses
    every CONNECT with 403, as egressd refuses a name off the policy."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.seen = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            c, _ = self.sock.accept()
            threading.Thread(target=self.one, args=(c,), daemon=True).start()

    def one(self, c):
        with c:
            buf = b""
            while b"\r\n\r\n" not in buf:
                b = c.recv(65536)
                if not b:
                    return
                buf += b
            head, _, body = buf.partition(b"\r\n\r\n")
            lines = head.decode("latin1").split("\r\n")
            method, target = lines[0].split()[:2]
            self.seen.append("%s %s" % (method, target))
            if method == "CONNECT":
                c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                return
            length = next((int(l.split(":", 1)[1]) for l in lines if l.lower().startswith("content-length:")), 0)
            while len(body) < length:
                body += c.recv(65536)
            text = ("proxied %s %s %d" % (method, target, len(body))).encode()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(text), text))


def proxied():
    """A run with a network (the launcher's proxy variables): http.get,
    fetch() and https through the proxy, as curl and Python go."""
    p = Proxy()
    env = {"http_proxy": "http://127.0.0.1:%d" % p.port, "https_proxy": "http://127.0.0.1:%d" % p.port}
    st, out, err = run("const http = require('http');\n"
                       "const r = await fetch('http://allowed.test/a?b=1');\n"
                       "console.log(r.status, await r.text());\n"
                       "const q = await fetch('http://allowed.test:8080/p', { method: 'POST', body: 'x'.repeat(70000) });\n"
                       "console.log(await q.text());\n"
                       "await new Promise((ok) => http.get('http://other.test/g', (res) => {\n"
                       "  let b = ''; res.on('data', (d) => b += d); res.on('end', () => { console.log(b); ok(); }); }));\n"
                       "try { await fetch('https://denied.test/'); console.log('https: no error'); }\n"
                       "catch (e) { console.log('https:', String(e.cause && e.cause.message || e.message)); }\n",
                       env=env)
    check(st == 0 and out == ("200 proxied GET http://allowed.test/a?b=1 0\n"
                              "proxied POST http://allowed.test:8080/p 70000\n"
                              "proxied GET http://other.test/g 0\n"
                              "https: the proxy refused CONNECT denied.test:443: HTTP/1.1 403 Forbidden\n"),
          "with the proxy variables: fetch(), a POST, http.get and https go through the proxy: %r %r" % (out, err))
    check(p.seen == ["GET http://allowed.test/a?b=1", "POST http://allowed.test:8080/p", "GET http://other.test/g",
                     "CONNECT denied.test:443"], "what the proxy saw: %r" % p.seen)
    st, out, err = run("const r = await fetch('http://allowed.test/x'); console.log(r.status)")
    check(st == 1 and "fetch failed" in err, "without them, no proxy (no name resolves here): %r %r" % (out, err))


one_shot()
proxied()
sessions()
shutil.rmtree(WORK, ignore_errors=True)
if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
print("all passed")
