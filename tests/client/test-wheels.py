#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test-wheels.py SCRIPT MAKE_WHEEL: `mcp-exec wheels` (src/client/mcp-exec-wheels.py)
against a wheelhouse of its own, with pip pointed at a directory of wheels built
here (PIP_NO_INDEX=1, PIP_FIND_LINKS): add writes the manifest with the
dependency and appends to packages.txt once; list; verify catches a tampered
wheel (exit 1); bad specs are refused (exit 2) and a missing package is pip's
failure (exit 3), both leaving everything as it was; sync deletes what is no
longer listed; a run waits for the lock another holds, and holds it itself
while pip works. Debian's pip (/usr/bin/python3 -m pip), as on the hosts.
Issue 37: run as `mcp-exec wheels` runs it (python3 -I), a pip/ package
in the current directory or on PYTHONPATH (and a sitecustomize there)
never runs, and the real pip does the work; a run without -I is refused;
pip exiting 0 having fetched nothing is exit 3, the wheelhouse unchanged.
Issue 41: add, sync and prepare also make the prepared store (index.json,
verified copies, content-addressed trees) and verify checks it; a refused
`add` (another spec of a listed project) and a failure injected after each
step of a transaction (MCP_EXEC_WHEELS_TEST_FAIL_AT) leave the wheelhouse,
SHA256SUMS, packages.txt and the store byte for byte as they were; a wheel
with a path out of its tree or a symbolic link is refused."""

import fcntl
import hashlib
import http.server
import importlib.util
import json
import zipfile
import os
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import threading

PY = "/usr/bin/python3"
SCRIPT = sys.argv[1]
spec = importlib.util.spec_from_file_location("make_wheel", sys.argv[2])
make_wheel_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_wheel_mod)

if subprocess.run([PY, "-m", "pip", "--version"], capture_output=True).returncode != 0:
    print(f"SKIP: {PY} -m pip is missing (Debian: apt-get install python3-pip)")
    sys.exit(77)

top = tempfile.mkdtemp(prefix="test-wheels-")
idx = os.path.join(top, "index")
wh = os.path.join(top, "wheels")
store = os.path.join(top, "packages")
pkgs = os.path.join(top, "etc", "packages.txt")
os.mkdir(idx)
make_wheel_mod.make_wheel(idx, "mxbase", "1.0")
make_wheel_mod.make_wheel(idx, "mxtop", "2.0", ["mxbase>=1"])
make_wheel_mod.make_wheel(idx, "mxother", "1.0")
make_wheel_mod.make_wheel(idx, "mxother", "0.9")
# Every part of a wheel's layout the store handles: a package, a top-level
# extension module, a .pth, .data/purelib and .data/scripts, entry points,
# extras, Requires-Python.
RICH_DI = "mxrich-3.0.dist-info"
make_wheel_mod.make_wheel(idx, "mxrich", "3.0", ["mxbase>=1", 'mxother; extra == "cli"'], files={
    "mxrich/__init__.py": "VALUE = 3\n",
    "mxrich/cli.py": "def main():\n    print('rich')\n",
    "_mxrich_native.cpython-311-x86_64-linux-gnu.so": b"\x7fELF not really",
    "mxrich.pth": "import os\n",
    "mxrich-3.0.data/purelib/mxrich_extra.py": "X = 1\n",
    "mxrich-3.0.data/scripts/mxrich-tool": "#!python\nprint('tool')\n",
    f"{RICH_DI}/entry_points.txt": ("[console_scripts]\nmxrich = mxrich.cli:main\n"
                                    "[gui_scripts]\nmxrich-gui = mxrich.cli:main\n"),
})

env = {k: v for k, v in os.environ.items()
       if not k.startswith("PIP_") and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=idx, PIP_NO_CACHE_DIR="1",
           MCP_EXEC_PYTHON=PY, HOME=top, NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
env.pop("MCP_EXEC_WHEELHOUSE", None)
failed = False


def check(cond, what):
    global failed
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    failed |= not cond


def cmd(*args):
    return [PY, "-I", SCRIPT, "--config", os.devnull, "--wheelhouse", wh, "--store", store, "--packages-file", pkgs,
            *args]


def run(*args, **kw):
    r = subprocess.run(kw.get("argv", cmd(*args)), env=kw.get("env", env), cwd=kw.get("cwd"), capture_output=True,
                       text=True, timeout=300)
    print(f"$ wheels {' '.join(args)} -> {r.returncode}\n{r.stdout}{r.stderr}", flush=True)
    return r


def manifest():
    with open(os.path.join(wh, "SHA256SUMS")) as f:
        return f.read()


def listed():
    return {line.split("  ")[1]: line.split("  ")[0] for line in manifest().splitlines()}


def sha(name):
    with open(os.path.join(wh, name), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def leftovers():
    return [e for e in os.listdir(wh) if e.startswith(".")] + [e for e in os.listdir(store) if e.startswith(".")]


def snapshot():
    """Everything a command may change: the wheelhouse, the store and
    packages.txt, each path with its type, mode and content."""
    out = {}
    for root in (wh, store, os.path.dirname(pkgs)):
        if not os.path.exists(root):
            out[root] = None
            continue
        for d, dirs, files in os.walk(root):
            for n in dirs + files:
                q = os.path.join(d, n)
                st = os.lstat(q)
                if os.path.isfile(q) and not os.path.islink(q):
                    with open(q, "rb") as f:
                        out[q] = (st.st_mode, hashlib.sha256(f.read()).hexdigest())
                else:
                    out[q] = (st.st_mode, None)
    return out


def index():
    with open(os.path.join(store, "index.json")) as f:
        return json.load(f)


def store_matches_manifest():
    """index.json lists what SHA256SUMS lists; every copy hashes right, every
    tree is there, nothing else in wheels/ or trees/."""
    want = listed()
    got = {w["file"]: w["sha256"] for w in index()["wheels"]}
    copies = {f: hashlib.sha256(open(os.path.join(store, "wheels", f), "rb").read()).hexdigest()
              for f in os.listdir(os.path.join(store, "wheels"))}
    return got == want and copies == want and sorted(os.listdir(os.path.join(store, "trees"))) == sorted(want.values())


TOP, BASE, OTHER = "mxtop-2.0-py3-none-any.whl", "mxbase-1.0-py3-none-any.whl", "mxother-1.0-py3-none-any.whl"

# --- add: the dependency comes along, the manifest lists both with their hashes.
r = run("add", "mxtop")
check(r.returncode == 0, "add mxtop succeeds")
check(listed() == {TOP: sha(TOP), BASE: sha(BASE)}, "the manifest lists mxtop and its dependency mxbase, hashes right")
check(manifest().splitlines() == sorted(manifest().splitlines(), key=lambda s: s.split("  ")[1]),
      "the manifest is sorted by file name")
check(oct(os.stat(wh).st_mode & 0o7777) == "0o755", "the wheelhouse is 0755")
check(all(oct(os.stat(os.path.join(wh, f)).st_mode & 0o7777) == "0o644" for f in (TOP, BASE, "SHA256SUMS")),
      "wheels and manifest are 0644")
with open(pkgs) as f:
    text = f.read()
check(text.startswith("#") and text.splitlines().count("mxtop") == 1, "packages.txt made with a header, mxtop once")

# --- issue 41: the store holds verified copies, the trees and the index.
check(store_matches_manifest(), "add: the store's index, copies and trees match SHA256SUMS")
idx_top = {w["name"]: w for w in index()["wheels"]}
check(index()["version"] == 1 and index()["python"] == "%d.%d" % sys.version_info[:2],
      f"index.json: version 1, the interpreter's version: {index()['python']}")
check(idx_top["mxtop"]["requires_dist"] == ["mxbase>=1"] and idx_top["mxtop"]["top_level"] == ["mxtop"]
      and idx_top["mxtop"]["tags"] == ["py3-none-any"] and idx_top["mxtop"]["version"] == "2.0",
      f"index.json: mxtop's entry: {idx_top['mxtop']}")
tree = os.path.join(store, "trees", listed()[TOP])
check(os.path.isfile(os.path.join(tree, "mxtop.py")) and os.path.isdir(os.path.join(tree, "mxtop-2.0.dist-info")),
      "the tree holds the module and its .dist-info at its top")
modes = {oct(os.stat(os.path.join(d, n)).st_mode & 0o7777) for d, ds, fs in os.walk(store) for n in fs}
dmodes = {oct(os.stat(os.path.join(d, n)).st_mode & 0o7777) for d, ds, fs in os.walk(store) for n in ds}
check(modes == {"0o644"} and dmodes == {"0o755"} and oct(os.stat(store).st_mode & 0o7777) == "0o755",
      f"the store: files 0644, directories 0755: {modes} {dmodes}")
check(os.stat(os.path.join(store, "wheels", TOP)).st_ino != os.stat(os.path.join(wh, TOP)).st_ino,
      "the store's wheel is a copy, not a link to the raw file")
r = run("add", "mxtop")
check(r.returncode == 0, "add mxtop again succeeds")
with open(pkgs) as f:
    check(f.read().splitlines().count("mxtop") == 1, "packages.txt still lists mxtop once")
check(run("add", "mxother").returncode == 0 and set(listed()) == {TOP, BASE, OTHER}, "add mxother: three listed")

# --- list.
r = run("list")
rows = [line.split() for line in r.stdout.splitlines()]
check(r.returncode == 0 and ["mxbase", "1.0", BASE, str(os.path.getsize(os.path.join(wh, BASE)))] in rows
      and ["mxtop", "2.0", TOP, str(os.path.getsize(os.path.join(wh, TOP)))] in rows,
      "list: name, version, file, size")

# --- verify: clean, then a tampered wheel and an unlisted file.
check(run("verify").returncode == 0, "verify of an intact wheelhouse exits 0")
with open(os.path.join(wh, BASE), "rb") as f:
    original = f.read()
with open(os.path.join(wh, BASE), "ab") as f:
    f.write(b"x")
with open(os.path.join(wh, "stray-1.0-py3-none-any.whl"), "wb") as f:
    f.write(b"stray")
r = run("verify")
check(r.returncode == 1 and f"{BASE}: MISMATCH" in r.stdout, "verify: a tampered wheel is a mismatch, exit 1")
check("stray-1.0-py3-none-any.whl: not listed" in r.stdout, "verify: an unlisted file is reported")
with open(os.path.join(wh, BASE), "wb") as f:
    f.write(original)
check(run("verify").returncode == 0, "verify: exit 0 again once restored")

# --- refused: bad specs (nothing written), a package pip cannot find (staging cleaned).
before_m, before_p = manifest(), open(pkgs).read()
for bad in ("-r/etc/passwd", "--index-url=http://x", "pkg @ http://x/p.whl", "pkg;python_version<'4'", "pkg ",
            "", "pkg==", "../p"):
    r = run("add", "--", "mxother", bad)
    check(r.returncode == 2 and "not a package spec" in r.stderr, f"add {bad!r} is refused with exit 2")
r = run("add", "mxother==1.0")
check(r.returncode == 2 and "already lists mxother" in r.stderr, "a second spec for a listed project is refused")
r = run("add", "nosuchpkg")
check(r.returncode == 3 and "nosuchpkg" in r.stderr, "a package pip cannot find: exit 3 with pip's output")
check(manifest() == before_m and open(pkgs).read() == before_p and not leftovers(),
      "refusals leave manifest and packages.txt as they were, no staging left")

# --- issue 41 item 4: a refused add changes nothing. On the old script `add mxother==0.9` after
# `add mxother` was refused (exit 2) with mxother 0.9 already moved in and in SHA256SUMS.
before = snapshot()
r = run("add", "mxother==0.9")
check(r.returncode == 2 and "already lists mxother" in r.stderr, "add mxother==0.9 after add mxother is refused")
check(snapshot() == before, "... and the wheelhouse, SHA256SUMS, packages.txt and the store are as they were")
OLD = "mxother-0.9-py3-none-any.whl"
check(OLD not in listed() and not os.path.exists(os.path.join(wh, OLD)),
      "... mxother 0.9 neither listed nor in the wheelhouse")

# --- a failure after each step of a transaction undoes the steps before it.
RICH = "mxrich-3.0-py3-none-any.whl"


def fail_at(step, *args):
    before = snapshot()
    r = run(*args, env=dict(env, MCP_EXEC_WHEELS_TEST_FAIL_AT=step))
    same = snapshot() == before
    check(r.returncode == 4 and f"MCP_EXEC_WHEELS_TEST_FAIL_AT={step}" in r.stderr and same,
          f"{args[0]} failed after {step!r}: exit 4, everything as it was (same: {same})")


for step in ("download", "wheelhouse", "store-staged", "store", "index", "manifest", "packages"):
    fail_at(step, "add", "mxrich")
r = run("add", "mxrich")
check(r.returncode == 0 and RICH in listed() and store_matches_manifest(), "then add mxrich succeeds")
rich = {w["name"]: w for w in index()["wheels"]}["mxrich"]
check(rich["top_level"] == ["_mxrich_native", "mxrich", "mxrich_extra"] and rich["pth"] == ["mxrich.pth"]
      and rich["console_scripts"] == {"mxrich": "mxrich.cli:main"}
      and rich["gui_scripts"] == {"mxrich-gui": "mxrich.cli:main"} and rich["scripts"] == [".scripts/mxrich-tool"]
      and rich["requires_dist"] == ["mxbase>=1", 'mxother; extra == "cli"']
      and rich["unpacked_bytes"] > 0 and rich["requires_python"] is None,
      f"index.json: mxrich's modules, .pth, entry points, scripts, requirements: {rich}")
rtree = os.path.join(store, "trees", rich["sha256"])
check(os.path.isfile(os.path.join(rtree, "mxrich_extra.py"))
      and os.path.isfile(os.path.join(rtree, ".scripts", "mxrich-tool"))
      and not os.path.exists(os.path.join(rtree, "mxrich-3.0.data")),
      ".data/purelib is merged into the tree's top, .data/scripts kept as .scripts/")
inode = os.stat(os.path.join(rtree, "mxrich", "__init__.py")).st_ino
check(run("add", "mxother").returncode == 0 and os.stat(os.path.join(rtree, "mxrich", "__init__.py")).st_ino == inode,
      "a tree already unpacked is not unpacked again")

with open(pkgs) as f:
    saved = f.read()
with open(pkgs, "w") as f:
    f.write("mxother==0.9\n")
# (add went through every step; sync's own: replacing the wheelhouse's wheels, then the rest.)
for step in ("wheelhouse", "store", "manifest"):
    fail_at(step, "sync")
with open(pkgs, "w") as f:
    f.write(saved)

# --- verify checks the store; prepare makes it anew from SHA256SUMS alone.
check(run("verify").returncode == 0, "verify: wheelhouse and store intact")
copy = os.path.join(store, "wheels", BASE)
with open(copy, "ab") as f:
    f.write(b"x")
stray = os.path.join(store, "wheels", "stray-1.0-py3-none-any.whl")
with open(stray, "wb") as f:
    f.write(b"stray")
shutil.rmtree(os.path.join(store, "trees", listed()[TOP]))
r = run("verify")
check(r.returncode == 1 and f"store: wheels/{BASE}: MISMATCH" in r.stdout
      and "store: wheels/stray-1.0-py3-none-any.whl: not listed" in r.stdout
      and f"store: trees/{listed()[TOP]}: MISSING" in r.stdout,
      "verify: a changed copy, an unlisted file in the store and a missing tree are faults, exit 1")
os.unlink(copy)
for step in ("store-staged", "store", "index"):
    fail_at(step, "prepare")
r = run("prepare")
check(r.returncode == 0 and store_matches_manifest() and run("verify").returncode == 0,
      "prepare: the store made whole again from SHA256SUMS, the stray copy gone")
shutil.rmtree(store)
with open(os.path.join(wh, BASE), "ab") as f:
    f.write(b"x")
r = run("prepare")
check(r.returncode == 1 and "SHA256SUMS lists" in r.stderr and not os.path.exists(store),
      "prepare from a changed raw wheel: exit 1, no store made")
with open(os.path.join(wh, BASE), "wb") as f:
    f.write(original)
check(run("prepare").returncode == 0 and store_matches_manifest(), "prepare once the raw wheel is restored")

# --- a wheel with a path out of its tree, or a symbolic link, never enters the store.
make_wheel_mod.make_wheel(idx, "mxevil", "1.0", files={"../mxevil.py": "X = 1\n"})
make_wheel_mod.make_wheel(idx, "mxlink", "1.0")
with zipfile.ZipFile(os.path.join(idx, "mxlink-1.0-py3-none-any.whl"), "a") as z:
    zi = zipfile.ZipInfo("mxlink_etc", (2020, 1, 1, 0, 0, 0))
    zi.external_attr = (stat.S_IFLNK | 0o777) << 16
    z.writestr(zi, "/etc")
for bad, why in (("mxevil", "unsafe path"), ("mxlink", "symbolic link")):
    before = snapshot()
    r = run("add", bad)
    check(r.returncode == 4 and why in r.stderr and snapshot() == before
          and not os.path.exists(os.path.join(top, "mxevil.py")),
          f"add {bad}: refused ({why}), nothing changed")

# --- sync: packages.txt now lists mxother only; mxtop and mxbase go, after the manifest.
with open(pkgs, "w") as f:
    f.write("# test\nmxother  # a comment\n")
r = run("sync")
check(r.returncode == 0 and set(listed()) == {OTHER}, "sync: the manifest lists mxother only")
check(not os.path.exists(os.path.join(wh, TOP)) and not os.path.exists(os.path.join(wh, BASE)),
      "sync: the wheels no longer listed are deleted")
check(os.path.exists(os.path.join(wh, "stray-1.0-py3-none-any.whl")) is False, "sync: an unlisted .whl is deleted")
check(not leftovers(), "sync: no staging left")

# --- a malformed manifest: add refuses to build on it, sync writes it anew.
with open(os.path.join(wh, "SHA256SUMS"), "a") as f:
    f.write("not a line\n")
check(run("verify").returncode == 1, "verify: a malformed manifest exits 1")
r = run("add", "mxother")
check(r.returncode == 4 and "malformed" in r.stderr, "add on a malformed manifest exits 4")
check(run("sync").returncode == 0 and set(listed()) == {OTHER}, "sync writes a malformed manifest anew")

# --- the lock (a): a run waits while another holds it, and does nothing meanwhile.
with open(pkgs, "w") as f:
    f.write("mxtop\n")
before_m = manifest()
lockfd = os.open(wh, os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(lockfd, fcntl.LOCK_EX)
p = subprocess.Popen(cmd("sync"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
line = b""
while b"waiting" not in line and select.select([p.stderr], [], [], 120)[0]:   # bounded: EOF or 120 s
    chunk = os.read(p.stderr.fileno(), 4096)
    if not chunk:
        break
    line += chunk
line = line.decode()
check("waiting for another mcp-exec wheels run" in line, f"sync says it waits for the lock: {line.strip()!r}")
check(p.poll() is None and manifest() == before_m, "... and it waits without touching the manifest")
fcntl.flock(lockfd, fcntl.LOCK_UN)
out, err = p.communicate(timeout=300)
check(p.returncode == 0 and set(listed()) == {TOP, BASE}, f"... then syncs once the lock is free: {err!r}")
os.close(lockfd)

# --- the lock (b): a run holds it while pip works (an index that answers only when told).
hit, release = threading.Event(), threading.Event()


class Stalling(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        hit.set()
        release.wait(120)
        self.send_error(404)

    def log_message(self, *a):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stalling)
threading.Thread(target=srv.serve_forever, daemon=True).start()
env_http = dict(env, PIP_FIND_LINKS=f"http://127.0.0.1:{srv.server_address[1]}/", PIP_RETRIES="0")
before_m = manifest()
p = subprocess.Popen(cmd("add", "mxother"), env=env_http, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True)
check(hit.wait(120), "pip of the run asked the index")
lockfd = os.open(wh, os.O_RDONLY | os.O_DIRECTORY)
try:
    fcntl.flock(lockfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    held = False
except BlockingIOError:
    held = True
os.close(lockfd)
check(held, "the lock is held while pip works")
release.set()
out, err = p.communicate(timeout=300)
srv.shutdown()
check(p.returncode == 3 and manifest() == before_m and not leftovers(),
      f"pip's failure: exit 3, manifest unchanged, staging cleaned: {err.strip()[-200:]}")

# --- issue 37: an administrator's current directory and PYTHONPATH choose no code. A pip/ package
# (and a sitecustomize) that write a marker and say pip succeeded, fetching nothing.
evil = os.path.join(top, "evil")
marker = os.path.join(top, "marker")
os.makedirs(os.path.join(evil, "pip"))
for f in ("pip/__init__.py", "pip/__main__.py", "sitecustomize.py"):
    with open(os.path.join(evil, f), "w") as fh:
        fh.write(f"import os\nwith open({marker!r}, 'a') as m:\n    m.write({f!r} + ' by uid %d\\n' % os.getuid())\n"
                 + ("raise SystemExit(0)\n" if f.endswith("__main__.py") else ""))


def marked():
    return open(marker).read() if os.path.exists(marker) else ""


r = run("add", "mxother", cwd=evil)
check(r.returncode == 0 and OTHER in listed() and not marked(),
      f"add from a directory holding pip/: the real pip fetched mxother, nothing of the directory ran: {marked()!r}")
with open(pkgs) as f:
    want = f.read()
r = run("sync", cwd=evil, env=dict(env, PYTHONPATH=evil, PIP_PYTHON=os.path.join(evil, "nopython")))
check(r.returncode == 0 and set(listed()) == {TOP, BASE, OTHER} and not marked(),
      f"sync with PYTHONPATH (pip/, sitecustomize) and PIP_PYTHON there: nothing of them ran: {marked()!r}")
r = run("list", argv=[PY, SCRIPT, "--config", os.devnull, "--wheelhouse", wh, "list"])
check(r.returncode == 4 and "must run isolated" in r.stderr, "the script run without -I refuses to")
check(run("verify", cwd=evil).returncode == 0 and not marked(), "verify from there is clean")

# --- pip exiting 0 having fetched nothing (every line excluded by its marker) is no success.
before_m = manifest()
with open(pkgs, "w") as f:
    f.write('mxother ; python_version < "3"\n')
r = run("sync")
check(r.returncode == 3 and "fetched no wheel" in r.stderr and manifest() == before_m and not leftovers()
      and set(listed()) == {TOP, BASE, OTHER} and all(os.path.exists(os.path.join(wh, w)) for w in (TOP, BASE, OTHER)),
      "sync of a list pip fetches nothing for: exit 3, manifest and wheels as they were")
with open(pkgs, "w") as f:
    f.write(want)

# --- not root: refused unless the wheelhouse is the user's own.
if os.geteuid() == 0:
    # A copy of the script nobody can read (the source tree may be private).
    pub = tempfile.mkdtemp(prefix="test-wheels-pub-")
    os.chmod(pub, 0o755)
    shutil.copy(SCRIPT, os.path.join(pub, "mcp-exec-wheels.py"))
    os.chmod(os.path.join(pub, "mcp-exec-wheels.py"), 0o644)
    argv = cmd("sync")
    argv[2] = os.path.join(pub, "mcp-exec-wheels.py")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv], env=env,
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 4 and "must run as root" in r.stderr, f"nobody is refused: {r.stderr.strip()}")
    shutil.rmtree(pub)

subprocess.run(["rm", "-rf", top])
sys.exit(1 if failed else 0)
