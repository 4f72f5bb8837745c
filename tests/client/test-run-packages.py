#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test-run-packages MCP_EXEC: `mcp-exec run --package SPEC` against a scripted
server on a private socket: what goes on the wire ("packages" in the exec
arguments, in order, only when asked), the install report on stderr in
human form and never in the program's stdout, a failed install (the tool's
isError) with pip's output on stderr, escaped, and exit 125; bad specs and
too many refused before anything is sent."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

MCP_EXEC = sys.argv[1]
seen = []               # the exec arguments of every tools/call
failures = []

OK = {"content": [{"type": "text", "text": "{}"}],
      "structuredContent": {"stdout": "program out\n", "stderr": "", "exit_code": 0, "timed_out": False,
                            "oom_killed": False, "signal": None,
                            "packages": {"ok": True, "requested": ["tiny"],
                                         "installed": [{"name": "tiny", "version": "1.0"},
                                                       {"name": "dep", "version": "2.0"}],
                                         "already": ["old"], "replaced": ["numpy"], "duration_us": 1500000,
                                         "log": "Processing tiny\nSuccessfully installed tiny-1.0\n"}}}
FAILED = {"isError": True,
          "content": [{"type": "text", "text": "no wheel of tiny matches tiny==9"}, {"type": "text", "text": "{}"}],
          "structuredContent": {"stdout": "", "stderr": "", "exit_code": 1, "timed_out": False, "oom_killed": False,
                                "signal": None,
                                "packages": {"ok": False, "error": "no wheel of tiny matches tiny==9",
                                             "log": "ERROR: No matching distribution\n\x1b[31mred\n"}}}


def answer(method, params):
    if method == "initialize":
        return {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "1"}}
    args = params.get("arguments", {})
    seen.append(args)
    return FAILED if args.get("packages") == ["tiny==9"] else OK


def serve_one(c):
    f = c.makefile("rwb")
    for line in f:
        m = json.loads(line)
        if "id" not in m:
            continue
        reply = {"jsonrpc": "2.0", "id": m["id"], "result": answer(m["method"], m.get("params") or {})}
        f.write(json.dumps(reply).encode() + b"\n")
        f.flush()
    c.close()


tmp = tempfile.mkdtemp(prefix="mcp-exec-packages-test.")
path = os.path.join(tmp, "stdio.sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
srv.bind(path)
srv.listen(16)


def serve():
    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve_one, args=(c,), daemon=True).start()


threading.Thread(target=serve, daemon=True).start()


def run(args, want_rc, want_out=None):
    del seen[:]
    p = subprocess.run([MCP_EXEC] + args, input=b"print(1)\n", capture_output=True, timeout=30,
                       env={"MCP_EXEC_STDIO_SOCKET": path, "PATH": os.environ.get("PATH", "")})
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    what = "mcp-exec %s: exit %d, stdout %r, stderr %r" % (" ".join(args), p.returncode, out, err)
    if p.returncode != want_rc:
        failures.append("%s: want exit %d" % (what, want_rc))
    if want_out is not None and out != want_out:
        failures.append("%s: want stdout %r" % (what, want_out))
    return list(seen), out, err


def expect(cond, message):
    if not cond:
        failures.append(message)


# Asked: the specs in order; the report on stderr, stdout only the program's.
s, out, err = run(["run", "--package", "tiny", "--package", "dep[x]>=2,<3", "-"], 0, "program out\n")
expect(len(s) == 1 and s[0].get("packages") == ["tiny", "dep[x]>=2,<3"], "--package sent %r" % s)
expect("mcp-exec: packages: installed tiny 1.0, dep 2.0; already in the session: old; shadowing the system's "
       "numpy (1.5 s)\n" in err, "the report on stderr: %r" % err)
expect("Processing" not in out + err, "pip's log of a good install was printed: %r %r" % (out, err))
# Not asked: no "packages" at all, no report.
s, out, err = run(["run", "-"], 0, "program out\n")
expect(len(s) == 1 and "packages" not in s[0], "a plain run sent %r" % s)
# Failed: the tool's error and pip's output (escaped) on stderr, nothing on stdout.
s, out, err = run(["run", "--package", "tiny==9", "-"], 125, "")
expect("mcp-exec: no wheel of tiny matches tiny==9\n" in err, "the install error: %r" % err)
expect("mcp-exec: pip's output:\n  ERROR: No matching distribution\n  \\x1b[31mred\n" in err,
       "pip's output, escaped: %r" % err)
# Refused here: nothing is sent.
for bad in (["--package", "--index-url=http://x"], ["--package=-rfile"], ["--package", "a b"]):
    s, out, err = run(["run"] + bad + ["-"], 2, "")
    expect(s == [] and "not a package spec" in err, "%r: sent %r, stderr %r" % (bad, s, err))
s, out, err = run(["run"] + ["--package=p%d" % i for i in range(65)] + ["-"], 2, "")
expect(s == [] and "at most 64 --package" in err, "65 packages: sent %r, stderr %r" % (s, err))

os.unlink(path)
os.rmdir(tmp)
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
