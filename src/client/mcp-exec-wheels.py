# SPDX-License-Identifier: LGPL-2.1-or-later
"""mcp-exec wheels: fill the operator's wheelhouse (issue 23) and the
prepared package store runs install from (issue 41).

Run on the host, as root, by `mcp-exec wheels ...` (which execs this file)
or by mcp-exec-wheels.service. The wheelhouse (MCP_EXEC_WHEELHOUSE) holds
pip's raw downloads and their manifest (SHA256SUMS, package-spec.h); runs
never see it. They see only the store (MCP_EXEC_PACKAGE_STORE): a verified
copy of every listed wheel, each unpacked once (content-addressed by its
hash), and index.json, the store's commit point (docs/packages.md, the
layout in build_store()).

Every writing command (add, sync, prepare) is a transaction (class Txn): all
checks, downloads, copies and unpacking happen first, in hidden staging
directories; then the wheelhouse's new files, the store's new files,
index.json, SHA256SUMS and packages.txt go in place, each step undone on a
failure of a later one; only then is what is no longer listed deleted. A
refused or failed command leaves all of them as they were.

pip does the downloading with its own configuration (/etc/pip.conf,
PIP_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX, ...): that is how an operator
points it at a mirror, and how the tests point it at a local directory.

It runs as root wherever the administrator typed the command, so nothing
of that place may choose the code that runs: this script runs isolated
(`python3 -I`, by wheels-cmd.c), then works from / and starts pip isolated
too (`python3 -I -m pip`), with no PYTHON* variable in its environment
(child_env()).
"""

import argparse
import configparser
import email.parser
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile

WHEELHOUSE_DEFAULT = "/var/lib/mcp-exec/wheels"
STORE_DEFAULT = "/var/lib/mcp-exec/packages"   # PACKAGE_STORE_DEFAULT, package-spec.h
MANIFEST = "SHA256SUMS"
INDEX = "index.json"                            # PACKAGE_STORE_INDEX
INDEX_VERSION = 1
# One wheel unpacked: a zip bomb from an index fills no disk as root.
TREE_BYTES_MAX = 4 << 30
TREE_FILES_MAX = 200000
# The test hook (tests/client/test-wheels.py): fail a writing command after
# the named step of its transaction, to prove that the steps before are
# undone. Read only here; never set in production.
TEST_FAIL_AT = "MCP_EXEC_WHEELS_TEST_FAIL_AT"
CONFIG_DEFAULT = "/etc/mcp-exec/mcp-exec.conf"
PACKAGES_DEFAULT = "/etc/mcp-exec/packages.txt"
STAGING_PREFIX = ".staging-"
PACKAGE_SPEC_MAX = 128

EXIT_OK = 0
EXIT_MISMATCH = 1  # verify: a listed wheel or the store is missing or differs, or the manifest is malformed
EXIT_USAGE = 2  # the command line, a spec, packages.txt
EXIT_PIP = 3  # pip failed; the wheelhouse is unchanged
EXIT_FAILED = 4  # anything else: permissions, I/O

PACKAGES_HEADER = """\
# /etc/mcp-exec/packages.txt: what `mcp-exec wheels sync` keeps in the
# wheelhouse (MCP_EXEC_WHEELHOUSE, /var/lib/mcp-exec/wheels), in pip's
# requirements syntax, one requirement a line: e.g.
#   polars
#   scikit-learn==1.5.*
# `mcp-exec wheels add NAME...` appends here; mcp-exec-wheels.timer (not
# enabled by default) runs the sync. See mcp-exec(1).
"""

# The same grammar as package_spec_valid() (src/shared/package-spec.c): a
# name, optional extras, optional version clauses, nothing else.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_CLAUSE = r"(?:===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9][A-Za-z0-9.*+!_-]*"
SPEC_RE = re.compile(rf"({_NAME})(?:\[{_NAME}(?:,{_NAME})*\])?(?:{_CLAUSE}(?:,{_CLAUSE})*)?")
# What wheelhouse_load() accepts: "<name>-<version>-...whl".
WHEEL_RE = re.compile(r"([A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?)-([A-Za-z0-9_.!+]+)-[A-Za-z0-9_.+-]+\.whl")
MANIFEST_LINE_RE = re.compile(r"([0-9a-f]{64})  (\S+)")
HIDDEN_TREES = ("/tmp", "/var/tmp", "/run", "/dev", "/proc", "/sys", "/home", "/root")


class Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def warn(msg):
    print(f"mcp-exec wheels: {msg}", file=sys.stderr, flush=True)


def spec_valid(s):
    return 0 < len(s.encode("utf-8", "surrogateescape")) <= PACKAGE_SPEC_MAX and SPEC_RE.fullmatch(s) is not None


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def spec_name(spec):
    return normalize(SPEC_RE.fullmatch(spec).group(1))


def read_config(path):
    """The KEY=VALUE lines of an EnvironmentFile= (quotes stripped)."""
    values = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line or line[0] in "#;" or "=" not in line:
                    continue
                k, v = line.split("=", 1)
                v = v.strip()
                if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
                    v = v[1:-1]
                values[k.strip()] = v
    except FileNotFoundError:
        pass
    except PermissionError:
        # A user's `list` of root's 0600 file: the defaults, said so.
        warn(f"cannot read {path}: using the defaults (or pass --wheelhouse)")
    except OSError as e:
        raise Failure(EXIT_FAILED, f"cannot read {path}: {e.strerror}")
    return values


def setting(name, config):
    return os.environ[name] if name in os.environ else config.get(name)


def resolve_python(value):
    """As config_resolve_python() does: a bare name in /usr/local/bin or
    /usr/bin (never $PATH), the result under /usr."""
    if "/" in value:
        if not value.startswith("/"):
            raise Failure(EXIT_USAGE, f"MCP_EXEC_PYTHON={value}: must be a bare name or an absolute path")
        candidates = [value]
    else:
        candidates = [f"/usr/local/bin/{value}", f"/usr/bin/{value}"]
    for c in candidates:
        if os.access(c, os.X_OK):
            p = os.path.realpath(c)
            if not p.startswith("/usr/"):
                raise Failure(EXIT_USAGE, f"MCP_EXEC_PYTHON={value}: resolves to {p}, which is outside /usr")
            return p
    raise Failure(EXIT_USAGE, f"MCP_EXEC_PYTHON={value}: no such executable in /usr/local/bin or /usr/bin")


def check_dir_path(what, path):
    if not path.startswith("/") or os.path.normpath(path) != path or path == "/" or len(path) > 255:
        raise Failure(EXIT_USAGE, f"{what} {path!r}: must be an absolute, normalized path")
    if any(path == t or path.startswith(t + "/") for t in HIDDEN_TREES):
        # Runs see these trees writable or not at all; the server refuses
        # such a path. Filling one is still fine (a test).
        warn(f"{path} is under a tree runs do not see; the server refuses it as the {what}")


def check_paths(wheelhouse, store):
    check_dir_path("wheelhouse", wheelhouse)
    check_dir_path("store", store)
    # As config.c refuses them: runs are denied the wheelhouse, so neither
    # may hold the other.
    if wheelhouse == store or store.startswith(wheelhouse + "/") or wheelhouse.startswith(store + "/"):
        raise Failure(EXIT_USAGE, f"the store {store} and the wheelhouse {wheelhouse} must be apart")


def check_may_write(path):
    """Root, or a user who owns the directory (or would create it)."""
    if os.geteuid() == 0:
        return
    p = path
    while not os.path.lexists(p):
        p = os.path.dirname(p)
    if os.lstat(p).st_uid != os.geteuid():
        raise Failure(EXIT_FAILED, f"must run as root (or with --wheelhouse and --store in directories you own): {p}")


def fail_point(step):
    """The test hook: a failure right after step (TEST_FAIL_AT)."""
    if os.environ.get(TEST_FAIL_AT) == step:
        raise Failure(EXIT_FAILED, f"{TEST_FAIL_AT}={step}: failing as the test asked")


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path, data, mode=0o644):
    """path's new content by rename of a fsynced temporary file beside it."""
    d, base = os.path.split(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{base}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(d)


def read_bytes(path):
    """A file's content, or None if there is none."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def remove_tree(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


class Txn:
    """A command's changes: each step registers how to undo it. rollback()
    undoes them, last first; after commit() they stay and what was queued
    with later() (deleting what is no longer listed) runs."""

    def __init__(self):
        self.undo = []
        self.cleanup = []

    def did(self, undo):
        self.undo.append(undo)

    def later(self, fn):
        self.cleanup.append(fn)

    def replace_file(self, path, data, mode=0o644):
        """path's new content, by rename; undone by writing the old one back."""
        old = read_bytes(path)
        atomic_write(path, data, mode)
        self.did(lambda: atomic_write(path, old, mode) if old is not None else os.unlink(path))

    def rename_in(self, src, dst, backup_dir):
        """Moves src to dst; what dst was moves to backup_dir (same file
        system) until the commit, and back on a rollback."""
        bak = None
        if os.path.lexists(dst):
            bak = os.path.join(backup_dir, f"{len(self.undo)}-{os.path.basename(dst)}")
            os.rename(dst, bak)
        try:
            os.rename(src, dst)
        except BaseException:
            if bak:
                os.rename(bak, dst)
            raise

        def undo():
            os.rename(dst, src)
            if bak:
                os.rename(bak, dst)
        self.did(undo)

    def rollback(self):
        ok = True
        for undo in reversed(self.undo):
            try:
                undo()
            except OSError as e:
                warn(f"cannot undo a step: {e}")
                ok = False
        self.undo = []
        if not ok:
            warn("the rollback was incomplete: run `mcp-exec wheels verify`, then `sync`")

    def commit(self):
        self.undo = []
        for fn in self.cleanup:
            try:
                fn()
            except OSError as e:
                warn(f"after the change, cleaning up: {e} (`mcp-exec wheels verify` shows what is left)")


class Wheelhouse:
    def __init__(self, path):
        self.path = path
        self.fd = -1

    def open(self, create):
        if create:
            try:
                os.makedirs(self.path, mode=0o755, exist_ok=True)
            except OSError as e:
                raise Failure(EXIT_FAILED, f"cannot create {self.path}: {e.strerror}")
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        except OSError as e:
            raise Failure(EXIT_FAILED, f"cannot open {self.path}: {e.strerror}")
        return True

    def lock(self, exclusive):
        """flock() on the directory: a timer run and a manual one wait for
        each other; list and verify share it. It covers the store too."""
        op = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.flock(self.fd, op | fcntl.LOCK_NB)
        except BlockingIOError:
            warn(f"waiting for another mcp-exec wheels run on {self.path}")
            fcntl.flock(self.fd, op)

    def fix_mode(self):
        st = os.fstat(self.fd)
        if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
            os.fchown(self.fd, 0, 0)
        if stat.S_IMODE(st.st_mode) != 0o755:
            os.fchmod(self.fd, 0o755)

    def join(self, name):
        return os.path.join(self.path, name)

    def read_manifest(self):
        """{file: hash}, or None if there is none; Failure if malformed."""
        try:
            with open(self.join(MANIFEST), encoding="ascii") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as e:
            raise Failure(EXIT_MISMATCH, f"cannot read {self.join(MANIFEST)}: {e}")
        entries = {}
        for n, line in enumerate(lines, 1):
            m = MANIFEST_LINE_RE.fullmatch(line)
            if not m or not WHEEL_RE.fullmatch(m.group(2)):
                raise Failure(EXIT_MISMATCH, f"{self.join(MANIFEST)}:{n}: malformed line")
            entries[m.group(2)] = m.group(1)
        return entries

    @staticmethod
    def manifest_text(entries):
        return "".join(f"{entries[f]}  {f}\n" for f in sorted(entries)).encode("ascii")

    def remove_stale_staging(self):
        # Under the lock no other run stages: whatever is here was left by
        # a run that was killed.
        remove_staging(self.path, (STAGING_PREFIX, f".{MANIFEST}."))

    def wheel_files(self):
        return sorted(e for e in os.listdir(self.path) if not e.startswith(".") and e != MANIFEST)


def remove_staging(path, prefixes):
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return
    for e in names:
        if e.startswith(prefixes):
            remove_tree(os.path.join(path, e))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def child_env():
    """pip's environment: ours without what would pick the Python code that
    runs as root. Dropped: PYTHON* and _PYTHON* (PYTHONPATH, PYTHONHOME,
    PYTHONSTARTUP, PYTHONUSERBASE, _PYTHON_SYSCONFIGDATA_NAME, ...: -I makes
    pip's interpreter ignore them, and the interpreters pip starts itself for
    `--allow-source` builds would not), PIP_PYTHON (pip re-runs itself under
    that interpreter, not MCP_EXEC_PYTHON's) and the relative entries of
    PATH (the current directory). Kept: pip's own settings (PIP_INDEX_URL,
    PIP_FIND_LINKS, PIP_NO_INDEX, PIP_CONFIG_FILE, PIP_CACHE_DIR, ...), the
    operator's documented way to point it at a mirror or a directory of
    wheels (docs/packages.md, mcp-exec(1)); a relative path in one is taken from /."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "_PYTHON")) and k != "PIP_PYTHON"}
    if "PATH" in env:
        env["PATH"] = ":".join(p for p in env["PATH"].split(":") if p.startswith("/"))
    return env


def run_pip(python, args, verbose):
    cmd = [python, "-I", "-m", "pip", "--disable-pip-version-check", *args]
    kw = dict(stdin=subprocess.DEVNULL, cwd="/", env=child_env())
    if verbose:
        r = subprocess.run(cmd, **kw)
        out = ""
    else:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, encoding="utf-8", errors="replace",
                           **kw)
        out = r.stdout
    if r.returncode != 0:
        sys.stderr.write(out)
        raise Failure(EXIT_PIP, f"pip failed (exit {r.returncode}); the wheelhouse is unchanged")


def download(wh, python, reqs, allow_source, verbose):
    """Downloads (or builds) reqs, a requirements file with at least one
    requirement, into a staging directory in the wheelhouse (same file
    system: the wheels move in by rename). Returns (staging dir, {file:
    hash}) of the wheels in it: never none, as pip exiting 0 with nothing
    for a request is no success (every line excluded by its marker, or a pip
    that is not pip)."""
    staging = tempfile.mkdtemp(dir=wh.path, prefix=STAGING_PREFIX)
    if allow_source:
        args = ["wheel", "--wheel-dir", staging, "-r", reqs]
    else:
        args = ["download", "--only-binary=:all:", "--dest", staging, "-r", reqs]
    run_pip(python, args, verbose)
    got = {}
    for e in sorted(os.listdir(staging)):
        p = os.path.join(staging, e)
        if not WHEEL_RE.fullmatch(e) or not os.path.isfile(p) or os.path.islink(p):
            warn(f"not a wheel, left out: {e}")
            continue
        with open(p, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(p, 0o644)
        got[e] = sha256(p)
    if not got:
        n = len(requirement_lines(reqs))
        raise Failure(EXIT_PIP, f"pip exited 0 but fetched no wheel for the {n} requirement(s) of {reqs} "
                                "(excluded by their markers?); the wheelhouse is unchanged")
    return staging, got


def check_fetched(specs, got):
    """Each spec of `add` has a wheel of its project among got."""
    have = {normalize(WHEEL_RE.fullmatch(f).group(1)) for f in got}
    missing = [s for s in specs if spec_name(s) not in have]
    if missing:
        raise Failure(EXIT_PIP, f"pip exited 0 but fetched no wheel of {', '.join(missing)}; the wheelhouse is "
                                "unchanged")


def move_in(wh, txn, staging, got, listed):
    """Renames the staged wheels into the wheelhouse; one already there with
    the same hash stays as it is. Undone on a rollback."""
    for name, h in sorted(got.items()):
        dst = wh.join(name)
        if os.path.isfile(dst) and not os.path.islink(dst) and sha256(dst) == h:
            continue
        if name in listed:
            warn(f"{name}: the index serves different bytes than before; replaced")
        txn.rename_in(os.path.join(staging, name), dst, staging)
    os.fsync(wh.fd)


# --- The store (issue 41): what runs see, made from verified copies.

def wheel_tags(name):
    """The expanded tags of a wheel file name: py3.py2-none-any ->
    [py2-none-any, py3-none-any]."""
    parts = name[:-len(".whl")].split("-")
    if len(parts) not in (5, 6):
        raise Failure(EXIT_FAILED, f"{name}: not a wheel file name (name-version[-build]-python-abi-platform.whl)")
    py, abi, plat = parts[-3:]
    return sorted(f"{a}-{b}-{c}" for a in py.split(".") for b in abi.split(".") for c in plat.split("."))


def copy_verified(src, dst, want):
    """Copies src to dst (0644), hashing the bytes as they are written: the
    copy is what was hashed, whatever happens to src afterwards."""
    h = hashlib.sha256()
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with open(fd, "rb") as fi, open(dst, "xb") as fo:
        os.fchmod(fo.fileno(), 0o644)
        for block in iter(lambda: fi.read(1 << 20), b""):
            h.update(block)
            fo.write(block)
        fo.flush()
        os.fsync(fo.fileno())
    if h.hexdigest() != want:
        os.unlink(dst)
        raise Failure(EXIT_MISMATCH, f"{src}: its hash is {h.hexdigest()}, SHA256SUMS lists {want}; nothing was "
                                     "changed (`mcp-exec wheels sync` downloads it again)")


def safe_member(name):
    """A zip member's path as components, or Failure: relative, no "." or
    "..", no empty component, no backslash or control character."""
    parts = name.rstrip("/").split("/")
    if (not name or name.startswith("/") or "\\" in name or any(ord(c) < 0x20 for c in name)
            or any(p in ("", ".", "..") for p in parts)):
        raise Failure(EXIT_FAILED, f"unsafe path in the wheel: {name!r}")
    return parts


class Unpacked:
    """What unpack() learns of a wheel for its index entry."""

    def __init__(self):
        self.top = set()        # names at the tree's top
        self.files = []         # paths relative to the tree
        self.bytes = 0
        self.dist_info = None


def tree_path(parts, data_dir):
    """Where a member goes in the tree: NAME.data/{purelib,platlib}/X to X,
    NAME.data/scripts/X to .scripts/X, other NAME.data/KIND/X stay as
    .data/KIND/X (not on sys.path); the rest as it is."""
    if parts[0] != data_dir:
        return parts
    if len(parts) < 3:
        return None     # the .data directory itself, or its kinds
    kind = parts[1]
    if kind in ("purelib", "platlib"):
        return parts[2:]
    if kind == "scripts":
        return [".scripts"] + parts[2:]
    return [".data", kind] + parts[2:]


def unpack(whl, dest, data_dir):
    """Unpacks the wheel whl into the new directory dest: files 0644,
    directories 0755, no symbolic links, no path out of dest, bounded.
    data_dir: NAME-VERSION.data as the file name spells it; the wheel's
    own .dist-info's spelling wins."""
    u = Unpacked()
    seen = set()
    os.mkdir(dest, 0o755)
    with zipfile.ZipFile(whl) as z:
        infos = z.infolist()
        if len(infos) > TREE_FILES_MAX:
            raise Failure(EXIT_FAILED, f"{whl}: over {TREE_FILES_MAX} files")
        tops = {i.filename.split("/", 1)[0] for i in infos}
        dist_infos = [t for t in tops if t.endswith(".dist-info")]
        if len(dist_infos) == 1:
            data_dir = dist_infos[0][:-len(".dist-info")] + ".data"
        for info in infos:
            parts = safe_member(info.filename)
            if stat.S_ISLNK(info.external_attr >> 16):
                raise Failure(EXIT_FAILED, f"{whl}: a symbolic link: {info.filename!r}")
            if info.is_dir():
                continue
            rel = tree_path(parts, data_dir)
            if rel is None:
                continue
            key = "/".join(rel)
            if key in seen:
                raise Failure(EXIT_FAILED, f"{whl}: {key!r} twice")
            seen.add(key)
            d = dest
            for c in rel[:-1]:
                d = os.path.join(d, c)
                if not os.path.isdir(d):
                    os.mkdir(d, 0o755)     # fails on a file of that name: no mixing
            u.bytes += copy_member(z, info, os.path.join(d, rel[-1]), TREE_BYTES_MAX - u.bytes, whl)
            u.top.add(rel[0])
            u.files.append(key)
            if len(rel) == 2 and rel[0].endswith(".dist-info"):
                u.dist_info = rel[0]
    return u


def scan(tree):
    """The facts unpack() gave of a tree already in the store."""
    u = Unpacked()
    for d, dirs, files in os.walk(tree):
        rel = os.path.relpath(d, tree)
        for f in files:
            key = f if rel == "." else f"{rel}/{f}"
            u.files.append(key)
            u.top.add(key.split("/", 1)[0])
            u.bytes += os.lstat(os.path.join(d, f)).st_size
            if rel.endswith(".dist-info") and "/" not in rel:
                u.dist_info = rel
    return u


def copy_member(z, info, path, room, whl):
    n = 0
    with z.open(info) as fi, open(path, "xb") as fo:
        os.fchmod(fo.fileno(), 0o644)
        for block in iter(lambda: fi.read(1 << 20), b""):
            n += len(block)
            if n > room:
                raise Failure(EXIT_FAILED, f"{whl}: unpacks to over {TREE_BYTES_MAX} bytes")
            fo.write(block)
    return n


def top_level_names(u):
    """Every module name the tree puts on sys.path: a directory with Python
    code (.py, .pyc, .so) anywhere in it, a top-level .py or .so (the name
    up to its first dot)."""
    names = set()
    code = (".py", ".pyc", ".so")
    for f in u.files:
        first = f.split("/", 1)[0]
        if first.startswith(".") or first.endswith((".dist-info", ".data")) or not f.endswith(code):
            continue
        names.add(first.split(".", 1)[0] if "/" not in f else first)
    return sorted(names)


def entry(file, h, tree, u):
    """The index.json entry of a wheel unpacked in tree."""
    m = WHEEL_RE.fullmatch(file)
    if not u.dist_info:
        raise Failure(EXIT_FAILED, f"{file}: no .dist-info directory")
    di = os.path.join(tree, u.dist_info)
    with open(os.path.join(di, "METADATA"), encoding="utf-8", errors="replace") as f:
        meta = email.parser.HeaderParser().parse(f)
    name, version = meta.get("Name"), meta.get("Version")
    if not name or normalize(name) != normalize(m.group(1)) or not version:
        raise Failure(EXIT_FAILED, f"{file}: its METADATA names {name!r} {version!r}")
    eps = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    eps.optionxform = str
    try:
        eps.read(os.path.join(di, "entry_points.txt"), encoding="utf-8")
    except configparser.Error as e:
        raise Failure(EXIT_FAILED, f"{file}: entry_points.txt: {e}")

    def section(s):
        return {k: v.strip() for k, v in eps.items(s)} if eps.has_section(s) else {}
    return {
        "name": normalize(name),
        "version": version,
        "file": file,
        "sha256": h,
        "tags": wheel_tags(file),
        "requires_python": meta.get("Requires-Python"),
        "requires_dist": meta.get_all("Requires-Dist") or [],
        "provides_extra": meta.get_all("Provides-Extra") or [],
        "top_level": top_level_names(u),
        "pth": sorted(t for t in u.top if t.endswith(".pth")),
        "console_scripts": section("console_scripts"),
        "gui_scripts": section("gui_scripts"),
        "scripts": sorted(f for f in u.files if f.startswith(".scripts/")),
        "unpacked_bytes": u.bytes,
    }


def python_version(python):
    r = subprocess.run([python, "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd="/", env=child_env())
    if r.returncode != 0 or not re.fullmatch(r"\d+\.\d+\n", r.stdout):
        raise Failure(EXIT_FAILED, f"{python}: cannot tell its version: {r.stderr.strip()}")
    return r.stdout.strip()


class Store:
    """STORE/index.json, STORE/wheels/FILE.whl, STORE/trees/SHA256/ (docs/packages.md)."""

    def __init__(self, path):
        self.path = path

    def join(self, *names):
        return os.path.join(self.path, *names)

    def open(self, txn):
        """Makes the store (and wheels/, trees/) if need be, 0755; a store
        made by a command that then fails is removed again."""
        made = []
        for d in (self.path, self.join("wheels"), self.join("trees")):
            if not os.path.isdir(d):
                parent = os.path.dirname(d)
                os.makedirs(parent, mode=0o755, exist_ok=True)
                os.mkdir(d, 0o755)
                made.append(d)
            elif os.path.islink(d):
                raise Failure(EXIT_FAILED, f"{d}: a symbolic link")
            else:
                st = os.lstat(d)
                if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
                    os.chown(d, 0, 0)
                if stat.S_IMODE(st.st_mode) != 0o755:
                    os.chmod(d, 0o755)
        for d in made:      # undone last first: trees/, wheels/, then the store
            txn.did(lambda d=d: os.rmdir(d))
        remove_staging(self.path, (STAGING_PREFIX, f".{INDEX}."))

    def read_index(self):
        """The index's object, or None if there is none; Failure if unreadable."""
        data = read_bytes(self.join(INDEX))
        if data is None:
            return None
        try:
            j = json.loads(data)
            if not isinstance(j, dict) or j.get("version") != INDEX_VERSION or not isinstance(j.get("wheels"), list):
                raise ValueError("not a version 1 index")
            return j
        except ValueError as e:
            raise Failure(EXIT_MISMATCH, f"{self.join(INDEX)}: {e}")

    def has_wheel(self, file, h):
        p = self.join("wheels", file)
        return os.path.isfile(p) and not os.path.islink(p) and sha256(p) == h

    def build(self, txn, entries, source, python):
        """Stages and then puts in place (undone on a rollback) the store
        for entries ({file: hash}); source(file) is where the wheel is now.
        Returns the new index's bytes; committing it is the caller's."""
        staging = tempfile.mkdtemp(dir=self.path, prefix=STAGING_PREFIX)
        txn.later(lambda: remove_tree(staging))
        txn.did(lambda: remove_tree(staging))
        os.mkdir(os.path.join(staging, "wheels"), 0o755)
        os.mkdir(os.path.join(staging, "trees"), 0o755)
        wheels = []
        for file, h in sorted(entries.items()):
            copy = self.join("wheels", file)
            if not self.has_wheel(file, h):
                copy = os.path.join(staging, "wheels", file)
                copy_verified(source(file), copy, h)
            m = WHEEL_RE.fullmatch(file)
            data_dir = f"{m.group(1)}-{m.group(2)}.data"
            # Content-addressed: a tree of this hash is complete (it moved in
            # by rename) and is not unpacked again.
            tree = self.join("trees", h)
            if not os.path.isdir(tree) or os.path.islink(tree):
                tree = os.path.join(staging, "trees", h)
            # (Staged already: the same bytes under two names.)
            u = scan(tree) if os.path.isdir(tree) else unpack(copy, tree, data_dir)
            wheels.append(entry(file, h, tree, u))
        fail_point("store-staged")
        backup = os.path.join(staging, "replaced")
        os.mkdir(backup, 0o700)
        for kind in ("wheels", "trees"):
            for name in sorted(os.listdir(os.path.join(staging, kind))):
                txn.rename_in(os.path.join(staging, kind, name), self.join(kind, name), backup)
        fsync_dir(self.join("wheels"))
        fsync_dir(self.join("trees"))
        fail_point("store")
        listed_wheels, listed_trees = set(entries), set(entries.values())
        txn.later(lambda: self.remove_unlisted(listed_wheels, listed_trees))
        index = {"version": INDEX_VERSION, "python": python, "wheels": wheels}
        return (json.dumps(index, indent=1, sort_keys=False) + "\n").encode()

    def unlisted(self, wheels, trees):
        out = []
        for kind, keep in (("wheels", wheels), ("trees", trees)):
            try:
                names = os.listdir(self.join(kind))
            except FileNotFoundError:
                continue
            out += [os.path.join(kind, n) for n in sorted(names) if n not in keep]
        return out

    def remove_unlisted(self, wheels, trees):
        for rel in self.unlisted(wheels, trees):
            remove_tree(self.join(rel))


def store_commit(txn, wh, store, entries, source, python, packages=None):
    """The common end of add, sync and prepare: the store's files, then
    index.json (what runs see), then SHA256SUMS (what the front end
    sees), then packages.txt (what the next sync does): each undone if a
    later one fails."""
    index = store.build(txn, entries, source, python)
    txn.replace_file(store.join(INDEX), index)
    fail_point("index")
    if wh:
        txn.replace_file(wh.join(MANIFEST), Wheelhouse.manifest_text(entries))
        os.fsync(wh.fd)
        fail_point("manifest")
    if packages:
        path, text = packages
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        txn.replace_file(path, text)
        fail_point("packages")


def requirement_lines(path):
    """The requirement lines of a requirements file (no comments, no options)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = re.sub(r"(^|\s)#.*", "", line).strip()
            if line and not line.startswith("-"):
                out.append(line)
    return out


def write_reqs(wh, lines):
    fd, path = tempfile.mkstemp(dir=wh.path, prefix=f"{STAGING_PREFIX}req-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(f"{line}\n" for line in lines))
    return path


def packages_text(packages, specs):
    """packages.txt with the specs it does not list yet appended (made with
    a comment header), or None if it lists them all. A different spec of a
    listed project is refused: that is the operator's edit to make. Checked
    before anything is downloaded (issue 41: a refusal changes nothing)."""
    old = read_bytes(packages)
    listed = {}
    if old is not None:
        for line in requirement_lines(packages):
            m = re.match(_NAME, line)
            if m:
                listed.setdefault(normalize(m.group(0)), []).append(line)
    new = []
    for s in specs:
        name = spec_name(s)
        have = listed.get(name, [])
        if s.lower() in (h.lower() for h in have):
            print(f"{s}: already in {packages}")
            continue
        if have:
            raise Failure(EXIT_USAGE, f"{packages} already lists {name} as {have[0]!r}: edit it there, then run sync")
        listed[name] = [s]
        new.append(s)
    if not new:
        return None, []
    text = old if old is not None else PACKAGES_HEADER.encode()
    if text and not text.endswith(b"\n"):
        text += b"\n"
    return text + "".join(f"{s}\n" for s in new).encode("utf-8"), new


def cmd_add(wh, store, txn, opts, python):
    for s in opts.names:
        if not spec_valid(s):
            raise Failure(EXIT_USAGE, f"{s!r}: not a package spec (a name, optional [extras], optional version "
                                      "clauses such as ==1.5.* or >=2,<3; no URLs, markers, spaces or options)")
    try:
        old = wh.read_manifest() or {}
    except Failure as e:
        raise Failure(EXIT_FAILED, f"{e}; `mcp-exec wheels sync` writes it anew")
    # Every check before anything moves: a conflicting spec is refused
    # before pip runs.
    text, new = packages_text(opts.packages_file, opts.names)
    version = python_version(python)
    reqs = write_reqs(wh, opts.names)
    staging, got = download(wh, python, reqs, opts.allow_source, opts.verbose)
    check_fetched(opts.names, got)
    fail_point("download")
    # Listed wheels that are gone stay out: the manifest lists what is here.
    entries = {f: h for f, h in old.items() if os.path.isfile(wh.join(f))}
    entries.update(got)
    move_in(wh, txn, staging, got, old)
    fail_point("wheelhouse")
    store_commit(txn, wh, store, entries, wh.join, version,
                 (opts.packages_file, text) if text is not None else None)
    for s in new:
        print(f"{s}: added to {opts.packages_file}")
    print(f"{len(got)} wheel(s) downloaded, {len(entries)} listed in {wh.join(MANIFEST)} and prepared in "
          f"{store.path}")


def cmd_sync(wh, store, txn, opts, python):
    if not os.path.exists(opts.packages_file):
        raise Failure(EXIT_USAGE, f"{opts.packages_file}: no such file (mcp-exec wheels add NAME creates it)")
    try:
        old = wh.read_manifest() or {}
    except Failure as e:
        warn(f"{e}; writing it anew")    # sync replaces it whole
        old = {}
    version = python_version(python)
    # A list with no requirement left (comments only): an empty wheelhouse.
    if requirement_lines(opts.packages_file):
        staging, got = download(wh, python, opts.packages_file, opts.allow_source, opts.verbose)
        fail_point("download")
        move_in(wh, txn, staging, got, old)
    else:
        got = {}
    fail_point("wheelhouse")
    store_commit(txn, wh, store, got, wh.join, version)
    removed = [f for f in wh.wheel_files() if f not in got and f.endswith(".whl")]

    def remove_old():
        for f in removed:
            os.unlink(wh.join(f))
        os.fsync(wh.fd)
    txn.later(remove_old)
    print(f"{len(got)} wheel(s) listed in {wh.join(MANIFEST)} and prepared in {store.path}, {len(removed)} removed")


def cmd_prepare(wh, store, txn, opts, python):
    """The store anew from SHA256SUMS alone (an upgrade; the packages'
    postinst): every listed wheel hashed as it is copied."""
    entries = wh.read_manifest()
    if entries is None:
        raise Failure(EXIT_USAGE, f"{wh.join(MANIFEST)}: no such file (mcp-exec wheels add NAME makes it)")
    store_commit(txn, None, store, entries, wh.join, python_version(python))
    print(f"{len(entries)} wheel(s) of {wh.join(MANIFEST)} prepared in {store.path}")


def cmd_list(wh, opts):
    entries = wh.read_manifest()
    if not entries:
        print(f"{wh.path}: no wheels")
        return EXIT_OK
    rows = []
    for f in sorted(entries):
        m = WHEEL_RE.fullmatch(f)
        try:
            size = str(os.stat(wh.join(f)).st_size)
        except OSError:
            size = "missing"
        rows.append((normalize(m.group(1)), m.group(2), f, size))
    rows.sort()
    widths = [max(len(r[i]) for r in rows + [("NAME", "VERSION", "FILE", "SIZE")]) for i in range(3)]
    for r in [("NAME", "VERSION", "FILE", "SIZE")] + rows:
        print(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}")
    return EXIT_OK


def hash_fault(path, listed, label):
    """1 after printing LABEL: MISSING or MISMATCH when PATH (never a
    symbolic link) is not there or its sha256 is not LISTED, else 0."""
    try:
        if os.path.islink(path):
            raise OSError(errno.ELOOP, "a symbolic link")
        got = sha256(path)
    except OSError as e:
        print(f"{label}: MISSING ({e.strerror})")
        return 1
    if got != listed:
        print(f"{label}: MISMATCH (listed {listed}, is {got})")
        return 1
    return 0


def verify_store(store, entries):
    """The store against the manifest: index.json lists exactly the listed
    wheels with their hashes, every copy hashes right, every tree is there,
    nothing else is in wheels/ or trees/ (pip in a run sees wheels/).
    Returns the number of faults."""
    try:
        index = store.read_index()
    except Failure as e:
        print(f"store: {e}")
        return 1
    if index is None:
        print(f"store: {store.join(INDEX)}: MISSING (`mcp-exec wheels prepare` makes it)")
        return 1
    bad = 0
    indexed = {}
    for w in index["wheels"]:
        f, h = (w.get("file"), w.get("sha256")) if isinstance(w, dict) else (None, None)
        if not isinstance(f, str) or not WHEEL_RE.fullmatch(f) or not isinstance(h, str):
            print(f"store: {INDEX}: a malformed entry")
            bad += 1
            continue
        indexed[f] = h
    for f in sorted(set(entries) | set(indexed)):
        if entries.get(f) != indexed.get(f):
            print(f"store: {f}: the index lists {indexed.get(f)}, SHA256SUMS {entries.get(f)} "
                  "(`mcp-exec wheels prepare` makes them agree)")
            bad += 1
    for f, h in sorted(indexed.items()):
        bad += hash_fault(store.join("wheels", f), h, f"store: wheels/{f}")
        t = store.join("trees", h)
        if not os.path.isdir(t) or os.path.islink(t):
            print(f"store: trees/{h}: MISSING")
            bad += 1
    for rel in store.unlisted(set(indexed), set(indexed.values())):
        print(f"store: {rel}: not listed")
        bad += 1
    return bad


def cmd_verify(wh, store, opts):
    entries = wh.read_manifest()
    if entries is None:
        raise Failure(EXIT_MISMATCH, f"{wh.join(MANIFEST)}: no such file")
    bad = 0
    for f, h in sorted(entries.items()):
        bad += hash_fault(wh.join(f), h, f)
    for f in wh.wheel_files():
        if f not in entries:
            print(f"{f}: not listed (never installed)")
    store_bad = verify_store(store, entries)
    print(f"{len(entries)} wheel(s) listed, {bad} bad; the store: {store_bad} fault(s)")
    return EXIT_MISMATCH if bad or store_bad else EXIT_OK


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="mcp-exec wheels",
        description="Fill the wheelhouse (MCP_EXEC_WHEELHOUSE) and the prepared store runs install packages from "
                    "(MCP_EXEC_PACKAGE_STORE).",
        epilog="Exit status: 0 done; 1 verify found a missing or changed wheel or a fault in the store, or a "
               "listed wheel no longer hashes right; 2 usage (a bad spec, option or packages.txt line); 3 pip "
               "failed; 4 any other failure (not root, I/O). A command that fails changes nothing. pip's own "
               "configuration applies: /etc/pip.conf, PIP_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX, ... (relative "
               "paths taken from /); PYTHON* variables and PIP_PYTHON are ignored.")
    p.add_argument("--wheelhouse", help="the wheelhouse (default: MCP_EXEC_WHEELHOUSE from the environment or "
                                        f"{CONFIG_DEFAULT}, else {WHEELHOUSE_DEFAULT})")
    p.add_argument("--store", help="the prepared store (default: MCP_EXEC_PACKAGE_STORE from the environment or "
                                   f"{CONFIG_DEFAULT}, else {STORE_DEFAULT})")
    p.add_argument("--packages-file", default=PACKAGES_DEFAULT, help=f"the list (default {PACKAGES_DEFAULT})")
    p.add_argument("--config", default=CONFIG_DEFAULT, help=argparse.SUPPRESS)
    p.add_argument("-v", "--verbose", action="store_true", help="show pip's output as it runs")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    a = sub.add_parser("add", help="add specs to packages.txt and download them and their dependencies")
    a.add_argument("names", nargs="+", metavar="NAME")
    a.add_argument("--allow-source", action="store_true", help="build wheels from sources (pip wheel) if need be")
    s = sub.add_parser("sync", help="make the wheelhouse hold exactly what packages.txt resolves to")
    s.add_argument("--allow-source", action="store_true", help="build wheels from sources (pip wheel) if need be")
    sub.add_parser("prepare", help="make the store anew from SHA256SUMS (after an upgrade)")
    sub.add_parser("list", help="list the wheels: name, version, file, size")
    sub.add_parser("verify", help="hash every listed wheel and the store again; exit 1 on a fault")
    return p.parse_args(argv)


def run_writing(wh, store, opts, python):
    """add, sync or prepare as one transaction."""
    txn = Txn()
    wh.remove_stale_staging()
    try:
        store.open(txn)
        {"add": cmd_add, "sync": cmd_sync, "prepare": cmd_prepare}[opts.command](wh, store, txn, opts, python)
    except BaseException:
        txn.rollback()
        raise
    finally:
        wh.remove_stale_staging()
    txn.commit()


def main(argv):
    if not sys.flags.isolated:
        # By then a PYTHONPATH's sitecustomize has run: say so, run nothing.
        raise Failure(EXIT_FAILED, "must run isolated (python3 -I), as `mcp-exec wheels` starts it")
    opts = parse_args(argv)
    for attr in ("packages_file", "config"):
        if getattr(opts, attr) and not os.path.isabs(getattr(opts, attr)):
            setattr(opts, attr, os.path.abspath(getattr(opts, attr)))
    # The arguments were the only thing taken from the current directory.
    os.chdir("/")
    config = read_config(opts.config)
    path = opts.wheelhouse or setting("MCP_EXEC_WHEELHOUSE", config) or WHEELHOUSE_DEFAULT
    store_path = opts.store or setting("MCP_EXEC_PACKAGE_STORE", config) or STORE_DEFAULT
    check_paths(path, store_path)
    wh = Wheelhouse(path)
    store = Store(store_path)
    writes = opts.command in ("add", "sync", "prepare")
    if not writes:
        if not wh.open(create=False):
            print(f"{path}: no wheelhouse")
            return EXIT_MISMATCH if opts.command == "verify" else EXIT_OK
        wh.lock(exclusive=False)
        return cmd_list(wh, opts) if opts.command == "list" else cmd_verify(wh, store, opts)

    check_may_write(path)
    check_may_write(store_path)
    python = resolve_python(setting("MCP_EXEC_PYTHON", config) or "python3")
    os.umask(0o022)
    if not wh.open(create=opts.command != "prepare"):
        raise Failure(EXIT_USAGE, f"{path}: no wheelhouse to prepare the store from")
    wh.lock(exclusive=True)
    wh.fix_mode()
    run_writing(wh, store, opts, python)
    return EXIT_OK


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Failure as e:
        warn(str(e))
        sys.exit(e.code)
    except OSError as e:
        warn(f"{e.filename or ''}: {e.strerror}" if e.filename else str(e))
        sys.exit(EXIT_FAILED)
    except KeyboardInterrupt:
        sys.exit(130)
