#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""mcp-exec-servers-generator and mcp-exec-upstream-exec, run as systemd runs
them, without systemd: the generator over a servers.d of good and bad files
(MCP_EXEC_SERVERS_DIR) into a fresh directory; the wrapper with a fake
$CREDENTIALS_DIRECTORY in front of /usr/bin/env.

usage: test-servers-generator.py GENERATOR WRAPPER HTTP
(HTTP: 1 if this build has the bridge of URL= servers, mcp-exec-upstream-http)"""
import os
import re
import subprocess
import sys
import tempfile

GEN, WRAPPER, HTTP = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
CANARY = "canary-7f3a1c0e-secret"


def check(cond, msg):
    if not cond:
        print("FAIL:", msg, file=sys.stderr)
        sys.exit(1)


def generate(tmp, files, args=None):
    sd = os.path.join(tmp, "servers.d")
    out = os.path.join(tmp, "normal")
    os.makedirs(sd, exist_ok=True)
    os.makedirs(out, exist_ok=True)
    for name, text in files.items():
        path = os.path.join(sd, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o644)
    p = subprocess.run([GEN] + (args if args is not None else [out, tmp + "/early", tmp + "/late"]),
                       env={"MCP_EXEC_SERVERS_DIR": sd, "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=30)
    return p, sd, out


def test_generator():
    with tempfile.TemporaryDirectory() as tmp:
        p, sd, out = generate(tmp, {
            "everything.conf": 'COMMAND="/usr/bin/node /opt/e/index.js stdio"\n'
                               'CREDENTIALS=tok:/etc/credstore/e.tok\nCREDENTIAL_ENV=API_KEY=tok\n',
            "memory.conf": "COMMAND=/usr/bin/node\nINSTANCE=shared\n",
            "web.conf": "URL=http://127.0.0.1:3001/mcp\n",
            "broken.conf": "COMMAND=/usr/bin/node\n\nTOOLS=a\nTOOLS=b\n",
            "relative.conf": "COMMAND=node\n",
            "Bad.conf": "COMMAND=/usr/bin/node\n",
            # Two names with one user tag (upstream-units.h): the first in name order has units.
            "sa1x.conf": "COMMAND=/usr/bin/node\n",
            "smbe.conf": "COMMAND=/usr/bin/node\n",
        })
        # Never fails boot: status 0 with bad files.
        check(p.returncode == 0, "generator exit %d: %s" % (p.returncode, p.stderr))
        units = sorted(os.listdir(out))
        # A URL server has units (its bridge's) where this build has the bridge.
        web = ["mcp-exec-upstream-web.socket", "mcp-exec-upstream-web@.service"] if HTTP else []
        check(units == sorted(["mcp-exec-upstream-everything.socket", "mcp-exec-upstream-everything@.service",
                               "mcp-exec-upstream-memory.socket", "mcp-exec-upstream-memory@.service",
                               "mcp-exec-upstream-sa1x.socket", "mcp-exec-upstream-sa1x@.service",
                               "sockets.target.wants"] + web), "units written: %s" % units)
        wants = sorted(os.listdir(os.path.join(out, "sockets.target.wants")))
        check(wants == ["mcp-exec-upstream-everything.socket", "mcp-exec-upstream-memory.socket",
                        "mcp-exec-upstream-sa1x.socket"] + web[:1],
              "wants: %s" % wants)
        check(os.readlink(os.path.join(out, "sockets.target.wants", "mcp-exec-upstream-memory.socket")) ==
              os.path.join(out, "mcp-exec-upstream-memory.socket"), "want link target")
        # Each bad file named with its line (or the file, when no line is to blame).
        err = p.stderr
        for needle in (sd + "/broken.conf:4: TOOLS is set twice (first on line 3); that server is off",
                       sd + "/relative.conf:1: COMMAND: 'node' is not an absolute",
                       sd + "/Bad.conf: 'Bad' is not a server name",
                       sd + "/smbe.conf: its user tag 8d6bf0 is another server's; rename one of them; "
                       "that server is off",
                       "%d upstream server(s) with units, 3 refused" % (4 if HTTP else 3)):
            check(needle in err, "generator stderr lacks %r:\n%s" % (needle, err))
        with open(os.path.join(out, "mcp-exec-upstream-everything@.service")) as f:
            svc = f.read()
        # The wrapper (installed path) in front of the command, the credential by id only.
        check(re.search(r'\nExecStart="/[^"]*/mcp-exec-upstream-exec" "API_KEY=tok" "--" "/usr/bin/node" '
                        r'"/opt/e/index.js" "stdio"\n', svc), "ExecStart:\n" + svc)
        check("LoadCredential=tok:/etc/credstore/e.tok\n" in svc, "LoadCredential")
        check("SourcePath=%s/everything.conf\n" % sd in svc, "SourcePath")
        if HTTP:
            with open(os.path.join(out, "mcp-exec-upstream-web@.service")) as f:
                svc = f.read()
            check(re.search(r'\nExecStart="/[^"]*/mcp-exec-upstream-http" "--max-bytes=8388608" "--timeout=30" '
                            r'"--" "http://127.0.0.1:3001/mcp"\n', svc), "web's ExecStart:\n" + svc)
            check("\nIPAddressAllow=127.0.0.1\n" in svc, "web's IPAddressAllow:\n" + svc)
        else:
            check("web.conf: URL= (Streamable HTTP) needs a build with libcurl" in err, "web off: " + err)

    # No servers.d at all: nothing written, nothing said, status 0.
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "normal")
        os.mkdir(out)
        p = subprocess.run([GEN, out, tmp, tmp], env={"MCP_EXEC_SERVERS_DIR": tmp + "/none"},
                           capture_output=True, text=True, timeout=30)
        check(p.returncode == 0 and os.listdir(out) == [] and p.stderr == "",
              "missing servers.d: %d %s %s" % (p.returncode, os.listdir(out), p.stderr))
        # An output directory that cannot be opened: still status 0.
        p = subprocess.run([GEN, tmp + "/absent", tmp, tmp], env={"MCP_EXEC_SERVERS_DIR": tmp + "/none"},
                           capture_output=True, text=True, timeout=30)
        check(p.returncode == 0 and "cannot open" in p.stderr, "absent out dir: %d %s" % (p.returncode, p.stderr))
        # Used by hand without arguments: usage, failure.
        p = subprocess.run([GEN], capture_output=True, text=True, timeout=30)
        check(p.returncode != 0 and "usage" in p.stderr, "no arguments: %d %s" % (p.returncode, p.stderr))


def wrapper(args, creds=None):
    env = {"PATH": "/usr/bin:/bin"}
    if creds is not None:
        env["CREDENTIALS_DIRECTORY"] = creds
    return subprocess.run([WRAPPER] + args, env=env, capture_output=True, text=True, timeout=30)


def test_wrapper():
    with tempfile.TemporaryDirectory() as creds:
        for name, data in (("tok", CANARY + "\n"), ("crlf", "two\r\n"), ("raw", "no newline"),
                           ("nul", "a\0b"), ("big", "x" * (64 * 1024 + 1)), ("empty", "")):
            with open(os.path.join(creds, name), "w") as f:
                f.write(data)
        os.mkdir(os.path.join(creds, "dir"))
        os.symlink("tok", os.path.join(creds, "link"))

        p = wrapper(["API_KEY=tok", "B=crlf", "C=raw", "E=empty", "--", "/usr/bin/env"], creds)
        check(p.returncode == 0, "wrapper: %d %s" % (p.returncode, p.stderr))
        env = dict(l.split("=", 1) for l in p.stdout.splitlines())
        check(env.get("API_KEY") == CANARY, "API_KEY=%r" % env.get("API_KEY"))
        check(env.get("B") == "two" and env.get("C") == "no newline" and env.get("E") == "",
              "B, C, E: %r" % env)
        # The program's arguments are passed as they are; the secret on no command line.
        p = wrapper(["API_KEY=tok", "--", "/bin/sh", "-c", 'printf "%s|" "$0" "$@"; cat /proc/$$/cmdline',
                     "zero", "a b", "--", ""], creds)
        check(p.returncode == 0 and p.stdout.startswith("zero|a b|--||"), "arguments: %r" % p.stdout)
        check(CANARY not in p.stdout, "the credential is on a command line")

        for args, needle in ((["API_KEY=nope", "--", "/usr/bin/env"], "cannot open the credential nope"),
                             (["A=nul", "--", "/usr/bin/env"], "holds a NUL byte"),
                             (["A=big", "--", "/usr/bin/env"], "larger than 64 KiB"),
                             (["A=dir", "--", "/usr/bin/env"], "no regular file"),
                             (["A=link", "--", "/usr/bin/env"], "cannot open the credential link"),
                             (["A=../tok", "--", "/usr/bin/env"], "invalid credential name"),
                             (["1A=tok", "--", "/usr/bin/env"], "is not ENV=ID"),
                             (["A=tok", "/usr/bin/env"], "usage"),
                             (["A=tok", "--", "env"], "usage"),
                             (["A=tok", "--", "/nonexistent/x"], "cannot execute /nonexistent/x")):
            p = wrapper(args, creds)
            check(p.returncode != 0 and needle in p.stderr, "%s: %d %r" % (args, p.returncode, p.stderr))
            check(CANARY not in p.stderr + p.stdout, "%s: the credential in a message" % args)
    # Credentials asked for, none loaded.
    p = wrapper(["A=tok", "--", "/usr/bin/env"])
    check(p.returncode != 0 and "no $CREDENTIALS_DIRECTORY" in p.stderr, "no dir: %r" % p.stderr)
    # None asked for: runs without a credentials directory.
    p = wrapper(["--", "/bin/echo", "hi"])
    check(p.returncode == 0 and p.stdout == "hi\n", "plain: %d %r" % (p.returncode, p.stdout))


test_generator()
test_wrapper()
print("ok")
