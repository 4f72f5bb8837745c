#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test-launch-packages LAUNCHER BOOTSTRAP INSTALLER: a run's "packages"
(src/launch/launch-packages.h), driven as the broker drives the launcher:
the real launcher, installer and /usr/bin/python3 with its pip, in a private
mount namespace with its own /tmp and the wheelhouse bound read-only (as a
unit sees it), without systemd. The wheels are built here: small pure-Python
ones, one with a dependency, and one that shadows a system package.
Issue 41: a package store (tests/lib/make-store.py, the stand-in of
`mcp-exec wheels prepare`) of more wheels: the installer's own resolution
against its index gives what pip gives from the same wheels as a plain
wheelhouse (clauses, extras, markers, Requires-Python, tags, pre-releases,
refusals; a conflict and a wheel with data files go to pip), with no pip;
every process of a run and of a session sees the packages (python3 -c, -m,
console and .data scripts by name, multiprocessing spawn), from the store
and from a plain wheelhouse; and a warm interpreter is dropped for a package
that brings a module its preload imported under another project's name, by
a .pth, or as a top-level extension module, and kept for one that does not.
Issue 37: in a session, a pip/, a _manylinux.py and pip configuration that an
earlier call left in the session's site and home never run nor count in a
later install, which still works; the installer starts from / with a home
the run cannot write, and under an egress run's filter (a probe installer
in its place, in a session with --egress in a network namespace of its own)."""
import atexit
import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading

PYTHON = os.path.realpath("/usr/bin/python3")
# The launcher runs with a tmpfs on /tmp: run copies kept elsewhere.
STAGE = tempfile.mkdtemp(prefix="mcp-exec-launch-test.", dir="/var/tmp" if os.path.isdir("/var/tmp") else "/dev/shm")
atexit.register(shutil.rmtree, STAGE, True)
LAUNCHER = shutil.copy2(sys.argv[1], STAGE)
BOOTSTRAP = shutil.copy2(sys.argv[2], STAGE)
INSTALLER = shutil.copy2(sys.argv[3], STAGE)
HOUSE = os.path.join(STAGE, "house")
os.mkdir(HOUSE)
# In the launcher's namespace the wheelhouse is bound to a path a unit may
# see it at (wheelhouse_path_valid()), wherever the build tree is.
MOUNT = "/mnt" if os.path.isdir("/mnt") else "/srv"
if subprocess.run([PYTHON, "-m", "pip", "--version"], capture_output=True).returncode != 0 or \
        subprocess.run([PYTHON, "-c", "import six"], capture_output=True).returncode != 0:
    print("SKIP: %s has no pip or no six" % PYTHON)
    sys.exit(77)
failures = []


def make_wheel_module(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_wheel", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


MAKE_WHEEL = make_wheel_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "make-wheel.py"))


def wheel(d, name, version, deps=(), body=None):
    """A pure-Python wheel of one package, name, with VALUE = version."""
    mod = name.replace("-", "_")
    path = MAKE_WHEEL.make_wheel(d, name, version, deps, {"%s/__init__.py" % mod: body or "VALUE = %r\n" % version})
    return os.path.basename(path)


def manifest(d, wrong=()):
    lines = []
    for fn in sorted(f for f in os.listdir(d) if f.endswith(".whl")):
        h = hashlib.sha256(open(os.path.join(d, fn), "rb").read()).hexdigest()
        lines.append("%s  %s\n" % ("0" * 64 if fn in wrong else h, fn))
    open(os.path.join(d, "SHA256SUMS"), "w").write("".join(lines))


GOOD = os.path.join(HOUSE, "good")
BAD = os.path.join(HOUSE, "bad")
for d in (GOOD, BAD):
    os.mkdir(d)
    wheel(d, "alpha", "1.0")
    wheel(d, "alpha", "2.0")
    wheel(d, "beta", "0.5", deps=["alpha>=2"])
    wheel(d, "six", "1.99.0")
    wheel(d, "gamma2", "3.0")
manifest(GOOD)
manifest(BAD, wrong=("alpha-2.0-py3-none-any.whl",))


def frame(code):
    code = code.encode()
    return b"MCPX" + struct.pack("<IQ", 1, len(code)) + code


def read_all(fd, out):
    while True:
        b = os.read(fd, 65536)
        if not b:
            break
        out.append(b)
    os.close(fd)


def frames(data):
    out = []
    while len(data) >= 20:
        typ, meta_len, data_len = data[4], *struct.unpack("<IQ", data[8:20])
        meta = json.loads(data[20:20 + meta_len]) if meta_len else None
        out.append((typ, meta, data[20 + meta_len:20 + meta_len + data_len]))
        data = data[20 + meta_len + data_len:]
    return out


class Launcher:
    def __init__(self, session=False, house=GOOD, readonly=True, wheelhouse=True, preload=None, bootstrap=BOOTSTRAP,
                 egress=False):
        self.ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ro = 'mount -o remount,bind,ro "$2" && ' if readonly else ""
        # --egress: a network namespace with lo up and nothing else, as a unit's.
        ro += "ip link set lo up && " if egress else ""
        args = [LAUNCHER] + (["--session"] if session else []) + ["--python=" + PYTHON, "--bootstrap=" + bootstrap]
        if egress:
            args.append("--egress")
        if wheelhouse:
            args.append("--wheelhouse=" + MOUNT)
        if preload:
            args.append("--preload=" + preload)
        self.proc = subprocess.Popen(
            ["unshare"] + ([] if os.geteuid() == 0 else ["--map-root-user"]) +
            ["--mount", "--propagation", "private"] + (["--net"] if egress else []) + ["sh", "-c",
             'mount --bind "$1" "$2" && ' + ro + 'mount -t tmpfs tmpfs /tmp && shift 2 && cd /tmp && exec "$@"',
             "sh", house, MOUNT] + args,
            stdin=theirs.fileno())
        theirs.close()
        self.session = session
        self.ctl.settimeout(60)
        self.ready = json.loads(self.ctl.recv(65536))

    def call(self, code, packages=None, max_bytes=1 << 20, timeout_ms=30000):
        fds = [os.pipe() for _ in range(4)]
        child_fds = [fds[0][0], fds[1][1], fds[2][1], fds[3][1]]
        msg = {"op": "run", "timeout_ms": timeout_ms, "limits": {}}
        if packages is not None:
            msg.update(packages=packages, packages_max_bytes=max_bytes)
        socket.send_fds(self.ctl, [json.dumps(msg).encode()], child_fds)
        for fd in child_fds:
            os.close(fd)
        outs = {1: [], 2: [], 3: []}
        readers = [threading.Thread(target=read_all, args=(fds[i][0], outs[i])) for i in (1, 2, 3)]
        for t in readers:
            t.start()
        try:
            os.write(fds[0][1], frame(code))
        except BrokenPipeError:
            pass        # a refused install reads no code
        os.close(fds[0][1])
        try:
            done = json.loads(self.ctl.recv(65536) or b"null") if self.session else None
        except (socket.timeout, ValueError):
            done = None
        for t in readers:
            t.join(60)
        fr = frames(b"".join(outs[3]))
        pk = [f for f in fr if f[0] == 7]
        return {"done": done, "stdout": b"".join(outs[1]).decode(), "stderr": b"".join(outs[2]).decode(),
                "frames": fr, "types": [f[0] for f in fr], "pk": pk[0][1] if pk else None,
                "log": pk[0][2] if pk else b"", "status": next((f[1] for f in fr if f[0] == 1), None)}

    def close(self):
        self.ctl.close()
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def run(code, packages=None, **kw):
    call_kw = {k: kw.pop(k) for k in ("max_bytes",) if k in kw}
    launcher = Launcher(**kw)
    r = launcher.call(code, packages, **call_kw)
    r["rc"] = launcher.close()
    return r


def refused(r):
    """The code (which prints "ran") did not run, STATUS 125 and END followed."""
    return (r["pk"] is not None and r["pk"].get("ok") is False and "ran" not in r["stdout"]
            and r["types"][-2:] == [1, 6] and (r["status"] or {}).get("exit_code") == 125)


RAN = "print('ran')\n"

r = run("import os\nprint(sorted(os.listdir('/tmp')))")
check(r["stdout"] == "[]\n" and r["pk"] is None and r["rc"] == 0,
      "without packages /tmp starts empty and no packages frame comes: %r %s" % (r["stdout"], r["types"]))

r = run("import alpha, beta\nprint(alpha.VALUE, beta.VALUE, alpha.__file__.startswith('/tmp/.local/'))", ["beta"])
pk = r["pk"] or {}
check(pk.get("ok") is True and r["stdout"] == "2.0 0.5 True\n" and r["types"][0] == 7 and r["rc"] == 0
      and sorted((i["name"], i["version"]) for i in pk.get("installed", [])) == [("alpha", "2.0"), ("beta", "0.5")]
      and pk.get("requested") == ["beta"] and pk.get("already") == [] and pk.get("replaced") == []
      and pk.get("fresh_interpreter") is False and isinstance(pk.get("duration_us"), int),
      "beta and its dependency alpha install before the code and import: %r %s %s" % (r["stdout"] + r["stderr"], pk,
                                                                                     r["types"]))
check(b"Successfully installed" in r["log"] and "Successfully" not in r["stdout"] + r["stderr"],
      "pip's output is the frame's data, not the program's: %r" % r["log"][-200:])

r = run(RAN, ["alpha==9"])
check(refused(r) and r["pk"]["error"] == "no version of alpha matching ==9 in the wheelhouse (it has: 1.0, 2.0)",
      "a version the wheelhouse lacks is refused by name and the code does not run: %s %r" % (r["pk"], r["stdout"]))

r = run(RAN, ["gamma"])
check(refused(r) and r["pk"]["error"].startswith("gamma is not in the wheelhouse (it has: alpha (1.0, 2.0), beta (0.5)"),
      "an unknown package is refused, naming it and what there is: %s" % r["pk"])

r = run(RAN, ["beta"], house=BAD)
check(refused(r) and "alpha-2.0-py3-none-any.whl" in r["pk"]["error"]
      and "hash does not match the wheelhouse manifest" in r["pk"]["error"],
      "a wheel whose hash differs from the manifest is refused and the code does not run: %s" % r["pk"])

r = run(RAN, ["beta"], max_bytes=100)
check(refused(r) and "over the limit of 100 bytes" in r["pk"]["error"] and "MCP_EXEC_MAX_INSTALL_BYTES" in r["pk"]["error"],
      "an install over the byte cap is refused: %s" % r["pk"])

r = run(RAN, ["--index-url=http://x/"])
check(refused(r), "a spec starting with '-' never reaches the installer: %s" % r["pk"])
p = subprocess.run([PYTHON, "-I", "-B", INSTALLER], input=json.dumps(
    {"wheelhouse": GOOD, "prefix": STAGE + "/p", "specs": ["-r/etc/passwd"], "max_bytes": 1 << 20}).encode(),
    capture_output=True)
ans = json.loads(p.stdout or b"{}")
check(ans.get("ok") is False and "not a valid package spec" in ans.get("error", ""),
      "and the installer refuses it on its own: %s" % ans)

# 64 specs of 120 bytes: their lists cannot all fit in a frame's meta; the frame still comes.
many = ["p%03d%s==1.0" % (k, "x" * 111) for k in range(64)]
r = run(RAN, many)
check(refused(r) and 0 < len(r["pk"]["requested"]) < 64 and "is not in the wheelhouse" in r["pk"]["error"],
      "the packages frame of 64 long specs fits, its lists cut: %d requested listed" % len((r["pk"] or {}).get("requested", [])))

r = run(RAN, ["beta"], readonly=False)
check(refused(r) and "writable" in r["pk"]["error"], "a wheelhouse the sandbox can write is refused: %s" % r["pk"])

r = run(RAN, ["beta"], wheelhouse=False)
check(refused(r) and r["pk"]["error"] == "packages are not enabled on this server",
      "without --wheelhouse packages are refused: %s" % r["pk"])

code = """import subprocess, sys
p = subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', 'alpha==1.0'], capture_output=True, text=True)
print(p.returncode, p.stderr.count('ERROR'))
import alpha
print(alpha.VALUE)
"""
r = run(code)
check(r["stdout"] == "0 0\n1.0\n", "pip install in the code takes the wheelhouse, then the import works: %r %r"
      % (r["stdout"], r["stderr"][-500:]))

# A warm unit preloaded six; the packages shadow it: a fresh interpreter, never the stale module.
r = run("import six, sys\nprint(six.VALUE)", ["six==1.99.0"], preload="six")
pk = r["pk"] or {}
check(pk.get("ok") is True and pk.get("replaced") == ["six"] and pk.get("fresh_interpreter") is True
      and r["stdout"] == "1.99.0\n", "a shadowed preloaded module gets a fresh interpreter: %s %r %r"
      % (pk, r["stdout"], r["stderr"][-300:]))

s = Launcher(session=True)
r = s.call("import beta\nprint(beta.VALUE)", ["beta"])
check((r["done"] or {}).get("exit_code") == 0 and r["stdout"] == "0.5\n" and (r["pk"] or {}).get("ok") is True,
      "a session's call installs and imports: %s %r" % (r["pk"], r["stdout"] + r["stderr"]))
r = s.call("import alpha\nprint(alpha.VALUE)", ["beta"])
pk = r["pk"] or {}
check(pk.get("ok") is True and pk.get("already") == ["beta"] and pk.get("installed") == [] and r["stdout"] == "2.0\n",
      "the session's specs come again: already there, not installed again: %s %r" % (pk, r["stdout"]))
r = s.call("try:\n    import gamma2\nexcept ImportError:\n    print('none')")
r2 = s.call("import gamma2\nprint(gamma2.VALUE)", ["beta", "gamma2"])
check(r["stdout"] == "none\n" and r2["stdout"] == "3.0\n",
      "a package installed into the session's site after a failed import of it is found: %r %r %s"
      % (r["stdout"], r2["stdout"] + r2["stderr"][-300:], r2["pk"]))
r = s.call(RAN, ["beta", "six==1.99.0"])
pk = r["pk"] or {}
check(pk.get("ok") is False and "replace" in pk.get("error", "") and "session_create" in pk.get("error", "")
      and "ran" not in r["stdout"] and (r["done"] or {}).get("exit_code") == 125 and not (r["done"] or {}).get("lost"),
      "after code ran a session refuses to shadow a system package: %s %s" % (pk, r["done"]))
r = s.call("print(beta.VALUE)")
check(r["stdout"] == "0.5\n", "and the session goes on: %r" % r["stdout"])
r = s.call(RAN, ["alpha==1.0"], timeout_ms=1)
check((r["pk"] or {}).get("ok") is False and "timed out" in r["pk"]["error"] and (r["done"] or {}).get("timed_out")
      and "ran" not in r["stdout"], "an install past the call's timeout is stopped: %s %s" % (r["pk"], r["done"]))
r = s.call("print(beta.VALUE)")
check(r["stdout"] == "0.5\n", "the session survives it: %r" % r["stdout"])
check(s.close() == 0, "the session closes cleanly")

s = Launcher(session=True)
r = s.call("import six\nprint(six.VALUE)", ["six==1.99.0"])
pk = r["pk"] or {}
check(pk.get("ok") is True and pk.get("replaced") == ["six"] and r["stdout"] == "1.99.0\n",
      "before its first code a session may shadow a system package: %s %r" % (pk, r["stdout"] + r["stderr"][-300:]))
s.close()

# Issue 37: an earlier call of a session leaves code where the installer would import it (the
# session's site: pip/, and _manylinux.py, which pip imports while it resolves) and pip
# configuration where pip would read it (the run's home is /tmp). Each writes a marker.
EVIL = r"""import os, sysconfig
def put(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
mark = "open('/tmp/pwned-%s', 'a').write('x')\n"
# The run's packages site (the user site), and where pip --prefix would put them.
for site in (sysconfig.get_path("purelib", "posix_user", vars={"userbase": "/tmp/.local"}),
             sysconfig.get_path("purelib", sysconfig.get_preferred_scheme("prefix"),
                                vars={"base": "/tmp/.local", "platbase": "/tmp/.local"})):
    put(site + "/pip/__init__.py", mark % "pip")
    put(site + "/pip/__main__.py", mark % "pip-main")
    put(site + "/_manylinux.py", mark % "manylinux")
for conf in ("/tmp/.config/pip/pip.conf", "/tmp/.pip/pip.conf"):
    put(conf, "[global]\nlog = /tmp/pwned-pipconf.log\n[install]\nno-deps = true\n")
put("/tmp/setup.cfg", "[install]\nprefix = /tmp/pwned-setupcfg\n")
put("/tmp/.pydistutils.cfg", "[install]\nprefix = /tmp/pwned-pydistutils\n")
print(sorted(os.listdir(site)))
"""
PWNED = "import os\nprint(sorted(f for f in os.listdir('/tmp') if f.startswith('pwned')))"
s = Launcher(session=True)
r = s.call(EVIL)
check("'pip'" in r["stdout"] and "_manylinux.py" in r["stdout"], "a session's code writes pip/ and _manylinux.py into "
      "its site: %r %r" % (r["stdout"], r["stderr"][-300:]))
r = s.call("import alpha, beta\nprint(alpha.VALUE, beta.VALUE)", ["beta"])
pk = r["pk"] or {}
check(pk.get("ok") is True and r["stdout"] == "2.0 0.5\n"
      and sorted((i["name"], i["version"]) for i in pk.get("installed", [])) == [("alpha", "2.0"), ("beta", "0.5")],
      "a later install in the session still works, its dependency too (no-deps of pip.conf unread): %s %r"
      % (pk, r["stdout"] + r["stderr"][-300:]))
r = s.call(PWNED)
check(r["stdout"] == "[]\n", "nothing the earlier call left ran in the installer, nor was read by it: %r" % r["stdout"])
s.close()

# The installer's process, seen from inside: a probe in the installer's place (launch-installer.c
# finds it next to the bootstrap), in an egress session. It answers what it found as its error.
PROBE_DIR = tempfile.mkdtemp(dir=STAGE)
shutil.copy2(BOOTSTRAP, PROBE_DIR)
with open(os.path.join(PROBE_DIR, os.path.basename(INSTALLER)), "w") as f:
    f.write(r"""import errno, json, os, socket, sys
r = {"cwd": os.getcwd(), "home": os.environ.get("HOME"), "isolated": sys.flags.isolated}
r["home_writable"] = os.access(r["home"] or "/tmp", os.W_OK)
s = socket.socket()
try:
    s.bind(("127.0.0.1", 0))
    r["bind"] = "allowed"
except OSError as e:
    r["bind"] = errno.errorcode.get(e.errno, str(e.errno))
sys.stdout.write(json.dumps({"ok": False, "error": "probe " + json.dumps(r, sort_keys=True)}))
""")
if shutil.which("ip"):
    s = Launcher(session=True, egress=True, bootstrap=os.path.join(PROBE_DIR, os.path.basename(BOOTSTRAP)))
    r = s.call(RAN, ["beta"])
    err = (r["pk"] or {}).get("error", "")
    got = json.loads(err[len("probe "):]) if err.startswith("probe ") else {}
    check(got.get("bind") == "EPERM", "the installer of an egress run cannot bind(), as its code cannot: %r" % err)
    check(got.get("cwd") == "/" and got.get("home") != "/tmp" and got.get("home_writable") is False
          and got.get("isolated") == 1, "it starts from /, with a home the run cannot write, isolated: %r" % err)
    r = s.call("import socket\ntry:\n    socket.socket().bind(('127.0.0.1', 0))\nexcept OSError as e:\n"
               "    print(e.errno)")
    check(r["stdout"] == "1\n", "(the code of that session cannot bind() either: %r)" % r["stdout"])
    s.close()
else:
    print("skip the egress probe: no ip(8) to bring lo up")

# --- issue 41: the package store ---------------------------------------------------------------------
_spec = __import__("importlib.util").util.spec_from_file_location(
    "make_store", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "make-store.py"))
MAKE_STORE = __import__("importlib.util").util.module_from_spec(_spec)
_spec.loader.exec_module(MAKE_STORE)
RICH = os.path.join(HOUSE, "rich")      # a plain wheelhouse: pip installs from it
STORE = os.path.join(HOUSE, "store")    # the same wheels as a package store
os.mkdir(RICH)
for fn in os.listdir(GOOD):
    if fn.endswith(".whl"):
        shutil.copy2(os.path.join(GOOD, fn), RICH)
KIWI_CLI = "import sys\n\ndef main():\n    print('kiwi cli', sys.argv[0].rsplit('/', 1)[-1])\n    return 0\n"
MAKE_WHEEL.make_wheel(RICH, "kiwi", "1.0", ["alpha"], {
    "kiwi/__init__.py": "VALUE = 'kiwi 1.0'\n", "kiwi/__main__.py": "import kiwi\nprint('kiwi main', kiwi.VALUE)\n",
    "kiwi/cli.py": KIWI_CLI,
    "kiwi-1.0.dist-info/entry_points.txt": "[console_scripts]\nkiwi = kiwi.cli:main\n[gui_scripts]\nkiwi-gui = kiwi.cli:main\n",
    "kiwi-1.0.data/scripts/kiwi-tool": "#!python\nimport kiwi\nprint('kiwi tool', kiwi.VALUE)\n"})
MAKE_WHEEL.make_wheel(RICH, "delta", "1.0", ['alpha==1.0; extra == "old"', 'gamma2; python_version >= "3"',
                                             'nosuchdep; sys_platform == "nosuch"'],
                      {"delta.py": "VALUE = 'delta'\n"}, metadata="Provides-Extra: old\n")
MAKE_WHEEL.make_wheel(RICH, "eps", "1.0", metadata="Requires-Python: >=3\n")
MAKE_WHEEL.make_wheel(RICH, "eps", "2.0", metadata="Requires-Python: >=4\n")
MAKE_WHEEL.make_wheel(RICH, "zeta", "1.0")
MAKE_WHEEL.make_wheel(RICH, "zeta", "2.0", tag="cp27-cp27mu-manylinux1_x86_64")
for v in ("1.0", "2.0rc1"):
    MAKE_WHEEL.make_wheel(RICH, "eta", v)
MAKE_WHEEL.make_wheel(RICH, "theta", "1.0rc1")
MAKE_WHEEL.make_wheel(RICH, "iota", "1.0", ["alpha", "kappa"])
MAKE_WHEEL.make_wheel(RICH, "kappa", "1.0", ["alpha<2"])
MAKE_WHEEL.make_wheel(RICH, "lam", "1.0", ["nosuchproj"])
MAKE_WHEEL.make_wheel(RICH, "mu", "1.0", files={"mu.py": "VALUE = 'mu'\n", "mu-1.0.data/data/share/mu.txt": "mu\n"})
# Item 3: each ships the module `six` that a warm unit preloads, under another project's name.
MAKE_WHEEL.make_wheel(RICH, "sixfork", "1.0", files={"six.py": "VALUE = 'sixfork'\n"})
MAKE_WHEEL.make_wheel(RICH, "sixpth", "1.0", files={"sixpth.pth": "sixpth_dir\n",
                                                    "sixpth_dir/six.py": "VALUE = 'sixpth'\n"})
EXT = None
if shutil.which("gcc"):
    info = subprocess.run([PYTHON, "-c", "import sysconfig; from pip._vendor.packaging import tags; print("
                           "sysconfig.get_paths()['include'], sysconfig.get_config_var('EXT_SUFFIX'), "
                           "next(iter(tags.sys_tags())))"], capture_output=True, text=True).stdout.split()
    src = os.path.join(STAGE, "six.c")
    with open(src, "w") as f:
        f.write('#include <Python.h>\nstatic struct PyModuleDef def = { PyModuleDef_HEAD_INIT, "six", NULL, -1, NULL };\n'
                'PyMODINIT_FUNC PyInit_six(void) {\n    PyObject *m = PyModule_Create(&def);\n'
                '    if (m && PyModule_AddStringConstant(m, "VALUE", "sixext") < 0) {\n        Py_DECREF(m);\n'
                '        return NULL;\n    }\n    return m;\n}\n')
    so = os.path.join(STAGE, "six.so")
    if len(info) == 3 and os.path.exists(os.path.join(info[0], "Python.h")) and subprocess.run(
            ["gcc", "-shared", "-fPIC", "-I", info[0], "-o", so, src]).returncode == 0:
        MAKE_WHEEL.make_wheel(RICH, "sixext", "1.0", files={"six" + info[1]: open(so, "rb").read()}, tag=info[2])
        EXT = "sixext"
if not EXT:
    print("skip the top-level extension module: no gcc or no Python.h for %s" % PYTHON)
manifest(RICH)
MAKE_STORE.make_store(RICH, STORE)


def install_direct(house, specs, max_bytes=1 << 20):
    """The installer alone, as the launcher starts it, on house bound read-only
    at MOUNT and a /tmp of its own: its answer and its log."""
    req = {"wheelhouse": MOUNT, "prefix": "/tmp/.local", "specs": specs, "max_bytes": max_bytes, "python": PYTHON}
    p = subprocess.run(["unshare"] + ([] if os.geteuid() == 0 else ["--map-root-user"]) +
                       ["--mount", "--propagation", "private", "sh", "-c",
                        'mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" && mount -t tmpfs tmpfs /tmp && '
                        'shift 2 && cd / && exec "$@"', "sh", house, MOUNT, PYTHON, "-I", "-B", INSTALLER],
                       input=json.dumps(req).encode(), capture_output=True,
                       env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/nonexistent", "TMPDIR": "/tmp",
                            "LANG": "C.UTF-8"})
    try:
        return json.loads(p.stdout), p.stderr.decode(errors="replace")
    except ValueError:
        return {"ok": None, "error": "no answer: %r" % p.stdout[:300]}, p.stderr.decode(errors="replace")


def outcome(ans):
    return (ans.get("ok"), sorted((i["name"], i["version"]) for i in ans.get("installed", [])),
            sorted(ans.get("replaced", [])), ans.get("error"))


# Each case: the specs, and whether the store decides alone (else pip does, from the store's copies).
CASES = [(["beta"], True), (["alpha<2"], True), (["alpha==1.*", "gamma2"], True), (["alpha!=2.0"], True),
         (["alpha==9"], True), (["delta[old]"], True), (["eps", "zeta"], True), (["eta", "theta"], True),
         (["eta>=2.0rc1"], True), (["six"], True), (["six==1.99.0"], True), (["kiwi", "sixfork"], True),
         (["iota"], False), (["lam"], False), (["mu"], False)]
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(2) as pool:
    plain = list(pool.map(lambda c: install_direct(RICH, c[0]), CASES))
for (specs, alone), (want, pip_log) in zip(CASES, plain):
    got, log = install_direct(STORE, specs)
    check(outcome(got) == outcome(want) and (("pip does" not in log and "Successfully" not in log) if alone
                                             else "pip does" in log) and got.get("ok") in (True, False),
          "%s from the store gives what pip gives from the same wheels (%s): %s / pip: %s; log %r"
          % (specs, "alone" if alone else "through pip", outcome(got), outcome(want), log[-300:]))
got, _ = install_direct(STORE, ["beta"], max_bytes=100)
check(got.get("ok") is False and "over the limit of 100 bytes" in got.get("error", ""),
      "the store's install keeps the byte cap: %s" % got)

# Item 1 and 2: a run from the store, no pip, and every process of it sees the packages.
EVERY = r"""import multiprocessing, os, subprocess, sys
import kiwi, alpha
print(kiwi.VALUE, alpha.VALUE, kiwi.__file__.startswith(%r))
def out(*cmd):
    p = subprocess.run(list(cmd), capture_output=True, text=True)
    return (p.stdout or p.stderr[-200:]).strip()
print(out(sys.executable, "-c", "import kiwi, alpha; print('child', kiwi.VALUE, alpha.VALUE)"))
print(out(sys.executable, "-m", "kiwi"))
print(out("kiwi"), "|", out("kiwi-gui"), "|", out("kiwi-tool"))
p = multiprocessing.get_context("spawn").Process(target=exec, args=("import kiwi; print('spawned', kiwi.VALUE)",))
p.start()
p.join()
print("spawn exit", p.exitcode)
""" % (MOUNT + "/trees/")
EVERY_OUT = ("kiwi 1.0 2.0 %s\nchild kiwi 1.0 2.0\nkiwi main kiwi 1.0\nkiwi cli kiwi | kiwi cli kiwi-gui | "
             "kiwi tool kiwi 1.0\nspawned kiwi 1.0\nspawn exit 0\n")
r = run(EVERY, ["kiwi"], house=STORE)
pk = r["pk"] or {}
check(pk.get("ok") is True and sorted((i["name"], i["version"]) for i in pk.get("installed", [])) ==
      [("alpha", "2.0"), ("kiwi", "1.0")] and b"from the package store" in r["log"] and b"Successfully" not in r["log"]
      and r["stdout"] == EVERY_OUT % True,
      "from the store, without pip, the code, a child python, -m, console, GUI and .data scripts by name and a "
      "spawned process see kiwi: %s %r %r" % (pk, r["stdout"], r["stderr"][-500:]))
r = run(EVERY.replace(MOUNT + "/trees/", "/tmp/.local/"), ["kiwi"], house=RICH)
check((r["pk"] or {}).get("ok") is True and r["stdout"] == EVERY_OUT % True,
      "installed by pip from a plain wheelhouse, every process of the run sees kiwi too: %r %r"
      % (r["stdout"], r["stderr"][-500:]))
r = run(code, house=STORE)
check(r["stdout"] == "0 0\n1.0\n", "pip install in the code takes the store's copies: %r %r"
      % (r["stdout"], r["stderr"][-500:]))

s = Launcher(session=True, house=STORE)
CHILD = ("import subprocess, sys\nprint(subprocess.run([sys.executable, '-c', 'import %s; print(%s.VALUE)'], "
         "capture_output=True, text=True).stdout.strip())")
r = s.call(CHILD % ("kiwi", "kiwi"), ["kiwi"])
r2 = s.call("import gamma2\n" + CHILD % ("gamma2, kiwi", "gamma2.VALUE, kiwi"), ["kiwi", "gamma2"])
pk = r2["pk"] or {}
check(r["stdout"] == "kiwi 1.0\n" and r2["stdout"] == "3.0 kiwi 1.0\n" and pk.get("already") == ["kiwi"]
      and [i["name"] for i in pk.get("installed", [])] == ["gamma2"],
      "in a session, a child python sees what each call added: %r %r %s" % (r["stdout"], r2["stdout"] + r2["stderr"], pk))
s.close()

# Item 3: a warm interpreter that preloaded six, and packages that bring a `six` of their own.
SIX = "import six\nprint(getattr(six, 'VALUE', 'system'))"
for project, house in [(p, h) for p in ["sixfork", "sixpth"] + ([EXT] if EXT else []) for h in (STORE, RICH)]:
    r = run(SIX, [project], house=house, preload="six")
    pk = r["pk"] or {}
    check(pk.get("ok") is True and pk.get("fresh_interpreter") is True and r["stdout"] == "%s\n" % project,
          "%s (%s) brings a module the warm unit preloaded: a fresh interpreter, never the stale six: %s %r %r"
          % (project, "store" if house == STORE else "pip", pk, r["stdout"], r["stderr"][-300:]))
r = run(SIX, ["gamma2"], house=STORE, preload="six")
check((r["pk"] or {}).get("fresh_interpreter") is False and r["stdout"] == "system\n",
      "a package that brings nothing the preload imported keeps the warm interpreter: %s" % r["pk"])
r = run(SIX, ["six==1.99.0"], house=STORE, preload="json")
pk = r["pk"] or {}
check(pk.get("replaced") == ["six"] and pk.get("fresh_interpreter") is False and r["stdout"] == "1.99.0\n",
      "six==1.99.0 replaces the system's six, which the preload (json) never imported: the warm one stays: %s %r"
      % (pk, r["stdout"]))

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
