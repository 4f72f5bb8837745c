# SPDX-License-Identifier: LGPL-2.1-or-later
"""mcp-exec wheels: fill the operator's wheelhouse (issue 23).

Run on the host, as root, by `mcp-exec wheels ...` (which execs this file)
or by mcp-exec-wheels.service. Runs only ever read the wheelhouse, and only
the wheels its manifest (SHA256SUMS, package-spec.h) lists, with the hash it
lists: the manifest is written last, by rename, so it is the commit point.

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
import errno
import fcntl
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

WHEELHOUSE_DEFAULT = "/var/lib/mcp-exec/wheels"
MANIFEST = "SHA256SUMS"
CONFIG_DEFAULT = "/etc/mcp-exec/mcp-exec.conf"
PACKAGES_DEFAULT = "/etc/mcp-exec/packages.txt"
STAGING_PREFIX = ".staging-"
PACKAGE_SPEC_MAX = 128

EXIT_OK = 0
EXIT_MISMATCH = 1  # verify: a listed wheel is missing or differs, or the manifest is malformed
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


def check_wheelhouse_path(path):
    if not path.startswith("/") or os.path.normpath(path) != path or path == "/" or len(path) > 255:
        raise Failure(EXIT_USAGE, f"wheelhouse {path!r}: must be an absolute, normalized path")
    if any(path == t or path.startswith(t + "/") for t in HIDDEN_TREES):
        # Runs see these trees writable or not at all; the server refuses
        # such an MCP_EXEC_WHEELHOUSE. Filling one is still fine (a test).
        warn(f"{path} is under a tree runs do not see; the server refuses it as MCP_EXEC_WHEELHOUSE")


def check_may_write(path):
    """Root, or a user who owns the wheelhouse (or would create it)."""
    if os.geteuid() == 0:
        return
    p = path
    while not os.path.lexists(p):
        p = os.path.dirname(p)
    if os.lstat(p).st_uid != os.geteuid():
        raise Failure(EXIT_FAILED, f"must run as root (or with --wheelhouse in a directory you own): {p}")


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
        each other; list and verify share it."""
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

    def write_manifest(self, entries):
        """The commit point: a new SHA256SUMS, by rename."""
        text = "".join(f"{entries[f]}  {f}\n" for f in sorted(entries))
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=f".{MANIFEST}.")
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(text)
                f.flush()
                os.fchmod(f.fileno(), 0o644)
                os.fsync(f.fileno())
            os.rename(tmp, self.join(MANIFEST))
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        os.fsync(self.fd)

    def remove_stale_staging(self):
        # Under the lock no other run stages: whatever is here was left by
        # a run that was killed.
        for e in os.listdir(self.path):
            if e.startswith(STAGING_PREFIX) or e.startswith(f".{MANIFEST}."):
                p = self.join(e)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    os.unlink(p)

    def wheel_files(self):
        return sorted(e for e in os.listdir(self.path) if not e.startswith(".") and e != MANIFEST)


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


def move_in(wh, staging, got, listed):
    """Renames the staged wheels into the wheelhouse; one already there with
    the same hash stays as it is."""
    for name, h in sorted(got.items()):
        dst = wh.join(name)
        if os.path.isfile(dst) and not os.path.islink(dst) and sha256(dst) == h:
            continue
        if name in listed:
            warn(f"{name}: the index serves different bytes than before; replaced")
        os.rename(os.path.join(staging, name), dst)
    os.fsync(wh.fd)


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


def append_specs(packages, specs):
    """Appends the specs packages.txt does not list yet (created with a
    comment header). A different spec of a listed project is refused:
    that is the operator's edit to make."""
    listed = {}
    if os.path.exists(packages):
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
        return
    os.makedirs(os.path.dirname(packages), mode=0o755, exist_ok=True)
    created = not os.path.exists(packages)
    with open(packages, "a", encoding="utf-8") as f:
        if created:
            os.fchmod(f.fileno(), 0o644)
            f.write(PACKAGES_HEADER)
        elif f.tell() > 0:
            with open(packages, "rb") as r:
                r.seek(-1, os.SEEK_END)
                if r.read(1) != b"\n":
                    f.write("\n")
        f.write("".join(f"{s}\n" for s in new))
        f.flush()
        os.fsync(f.fileno())
    for s in new:
        print(f"{s}: added to {packages}")


def cmd_add(wh, opts, python):
    for s in opts.names:
        if not spec_valid(s):
            raise Failure(EXIT_USAGE, f"{s!r}: not a package spec (a name, optional [extras], optional version "
                                      "clauses such as ==1.5.* or >=2,<3; no URLs, markers, spaces or options)")
    try:
        old = wh.read_manifest() or {}
    except Failure as e:
        raise Failure(EXIT_FAILED, f"{e}; `mcp-exec wheels sync` writes it anew")
    reqs = write_reqs(wh, opts.names)
    staging, got = download(wh, python, reqs, opts.allow_source, opts.verbose)
    check_fetched(opts.names, got)
    move_in(wh, staging, got, old)
    # Listed wheels that are gone stay out: the manifest lists what is here.
    entries = {f: h for f, h in old.items() if os.path.isfile(wh.join(f))}
    entries.update(got)
    wh.write_manifest(entries)
    # packages.txt last: a failed download leaves it as it was.
    append_specs(opts.packages_file, opts.names)
    print(f"{len(got)} wheel(s) downloaded, {len(entries)} listed in {wh.join(MANIFEST)}")


def cmd_sync(wh, opts, python):
    if not os.path.exists(opts.packages_file):
        raise Failure(EXIT_USAGE, f"{opts.packages_file}: no such file (mcp-exec wheels add NAME creates it)")
    try:
        old = wh.read_manifest() or {}
    except Failure as e:
        warn(f"{e}; writing it anew")    # sync replaces it whole
        old = {}
    # A list with no requirement left (comments only): an empty wheelhouse.
    if requirement_lines(opts.packages_file):
        staging, got = download(wh, python, opts.packages_file, opts.allow_source, opts.verbose)
        move_in(wh, staging, got, old)
    else:
        got = {}
    wh.write_manifest(got)
    removed = 0
    for f in wh.wheel_files():
        if f not in got and f.endswith(".whl"):
            os.unlink(wh.join(f))
            removed += 1
    os.fsync(wh.fd)
    print(f"{len(got)} wheel(s) listed in {wh.join(MANIFEST)}, {removed} removed")


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


def cmd_verify(wh, opts):
    entries = wh.read_manifest()
    if entries is None:
        raise Failure(EXIT_MISMATCH, f"{wh.join(MANIFEST)}: no such file")
    bad = 0
    for f, h in sorted(entries.items()):
        p = wh.join(f)
        try:
            if os.path.islink(p):
                raise OSError(errno.ELOOP, "a symbolic link")
            got = sha256(p)
        except OSError as e:
            print(f"{f}: MISSING ({e.strerror})")
            bad += 1
            continue
        if got != h:
            print(f"{f}: MISMATCH (listed {h}, is {got})")
            bad += 1
    for f in wh.wheel_files():
        if f not in entries:
            print(f"{f}: not listed (never installed)")
    print(f"{len(entries)} wheel(s) listed, {bad} bad")
    return EXIT_MISMATCH if bad else EXIT_OK


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="mcp-exec wheels",
        description="Fill the wheelhouse runs install packages from (MCP_EXEC_WHEELHOUSE).",
        epilog="Exit status: 0 done; 1 verify found a missing or changed wheel; 2 usage (a bad spec, "
               "option or packages.txt line); 3 pip failed (the wheelhouse is unchanged); 4 any other "
               "failure (not root, I/O). pip's own configuration applies: /etc/pip.conf, PIP_INDEX_URL, "
               "PIP_FIND_LINKS, PIP_NO_INDEX, ... (relative paths taken from /); PYTHON* variables and "
               "PIP_PYTHON are ignored.")
    p.add_argument("--wheelhouse", help="the wheelhouse (default: MCP_EXEC_WHEELHOUSE from the environment or "
                                        f"{CONFIG_DEFAULT}, else {WHEELHOUSE_DEFAULT})")
    p.add_argument("--packages-file", default=PACKAGES_DEFAULT, help=f"the list (default {PACKAGES_DEFAULT})")
    p.add_argument("--config", default=CONFIG_DEFAULT, help=argparse.SUPPRESS)
    p.add_argument("-v", "--verbose", action="store_true", help="show pip's output as it runs")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    a = sub.add_parser("add", help="add specs to packages.txt and download them and their dependencies")
    a.add_argument("names", nargs="+", metavar="NAME")
    a.add_argument("--allow-source", action="store_true", help="build wheels from sources (pip wheel) if need be")
    s = sub.add_parser("sync", help="make the wheelhouse hold exactly what packages.txt resolves to")
    s.add_argument("--allow-source", action="store_true", help="build wheels from sources (pip wheel) if need be")
    sub.add_parser("list", help="list the wheels: name, version, file, size")
    sub.add_parser("verify", help="hash every listed wheel again; exit 1 on a mismatch")
    return p.parse_args(argv)


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
    check_wheelhouse_path(path)
    wh = Wheelhouse(path)
    writes = opts.command in ("add", "sync")
    if not writes:
        if not wh.open(create=False):
            print(f"{path}: no wheelhouse")
            return EXIT_MISMATCH if opts.command == "verify" else EXIT_OK
        wh.lock(exclusive=False)
        return cmd_list(wh, opts) if opts.command == "list" else cmd_verify(wh, opts)

    check_may_write(path)
    python = resolve_python(setting("MCP_EXEC_PYTHON", config) or "python3")
    os.umask(0o022)
    wh.open(create=True)
    wh.lock(exclusive=True)
    wh.fix_mode()
    wh.remove_stale_staging()
    try:
        (cmd_add if opts.command == "add" else cmd_sync)(wh, opts, python)
    finally:
        wh.remove_stale_staging()
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
