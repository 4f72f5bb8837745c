# SPDX-License-Identifier: LGPL-2.1-or-later
# mcp-exec-install: installs a run's "packages" from the operator's wheelhouse
# (issue 23, launch-packages.h). Started by the launcher's trusted parent
# inside the run's sandbox, before the code is read, as
#
#     PYTHON -I -B mcp-exec-install.py
#
# with the request as one JSON object on stdin:
#     {"wheelhouse": W, "prefix": P, "specs": [...], "max_bytes": N, "allow_replace": bool}
# and its answer as one JSON object on stdout:
#     {"ok": bool, "error": "...", "installed": [{"name", "version"}], "replaced": [...]}
# pip's own output goes to stderr, which the launcher keeps (a bounded tail)
# apart from the program's output; nothing else writes to stdout.
#
# Two pip runs, in this process: a dry run that resolves the specs against
# the wheelhouse (the system's packages count as installed), checked here (every wheel in
# the manifest, the unpacked size under the cap, what it would shadow), then
# the install of exactly that set from a hash-pinned requirements file, so
# that pip itself checks each wheel against the manifest's hash.
#
# In a session the packages site is the session's, which its code can write
# (issue 37): pip, and everything it is known to import, is imported first,
# while sys.path is still the interpreter's own (-I: the standard library
# and the system's packages); then imports come from that path only
# (_SystemPathOnly), so a pip/ or _manylinux.py an earlier call left in the
# site never runs here. pip runs --isolated: no PIP_* variable, no user
# configuration ($HOME, XDG dirs); the launcher gives it an unwritable HOME
# and / as its working directory (launch-installer.c).
import hashlib
import importlib
import importlib.machinery
import json
import os
import re
import sys
import urllib.parse
import urllib.request
import zipfile

os.chdir("/")
try:
    from pip._internal.cli.main import main as _pip_main
except Exception:           # no pip (said when it is needed), or a broken one
    _pip_main = None
# What an install imports after pip's main (pip 23.0: seen with a tracer);
# others load through _SystemPathOnly. pkg_resources before all: it reads
# sys.path once, when imported, and may then load namespace packages of
# what it finds there without asking sys.meta_path.
for _m in ("sysconfig", "importlib.metadata", "compileall", "py_compile", "pip._vendor.pkg_resources",
           "pip._internal.metadata.pkg_resources", "pip._internal.metadata.importlib",
           "pip._internal.commands.install", "pip._internal.resolution.resolvelib.resolver",
           "pip._internal.resolution.resolvelib.factory", "pip._internal.operations.install.wheel",
           "pip._internal.operations.prepare", "pip._internal.models.installation_report",
           "pip._internal.network.session", "pip._internal.self_outdated_check", "pip._vendor.packaging.version",
           "pip._vendor.packaging.tags"):
    try:
        importlib.import_module(_m)
    except Exception:       # another pip: left to the guard
        pass


class _SystemPathOnly:
    """sys.meta_path's path finder once the installer looks at the run's
    files: a module comes from the path the interpreter started with (and a
    package's own directories under it), never from an entry sys.path gained
    since (the packages site), nor a namespace portion there."""

    def __init__(self, trusted):
        self.trusted = list(trusted)

    def _ok(self, p):
        return isinstance(p, str) and any(p == t or p.startswith(t.rstrip("/") + "/") for t in self.trusted)

    def find_spec(self, name, path=None, target=None):
        entries = self.trusted if path is None else [p for p in path if self._ok(p)]
        return importlib.machinery.PathFinder.find_spec(name, entries, target)

    def invalidate_caches(self):
        importlib.machinery.PathFinder.invalidate_caches()

    @staticmethod
    def find_distributions(*args, **kwargs):
        # Metadata (what is installed) is read on all of sys.path, the
        # site included: data, never code.
        return importlib.machinery.PathFinder.find_distributions(*args, **kwargs)


# From here on (the request is read, and the run's files looked at, below).
_GUARD = _SystemPathOnly(p for p in sys.path if os.path.isabs(p))
sys.meta_path[:] = [_GUARD if f is importlib.machinery.PathFinder else f for f in sys.meta_path]


def check_guard(sites):
    """Fail closed if the guard is not in place, or would trust the site."""
    if _GUARD not in sys.meta_path:
        raise Refused("cannot restrict the installer's imports (no path finder to replace)")
    for d in sites:
        if _GUARD._ok(d):
            raise Refused("the packages site %s is under the interpreter's own path; refusing to install" % d)


MANIFEST = "SHA256SUMS"         # package-spec.h, WHEELHOUSE_MANIFEST
REQUEST_MAX = 1 << 20

# package_spec_valid() of package-spec.c, as a regular expression.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_CLAUSE = r"(?:===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9][A-Za-z0-9.*+!_-]*"
SPEC = re.compile(r"(%s)(?:\[%s(?:,%s)*\])?(?:%s(?:,%s)*)?" % (_NAME, _NAME, _NAME, _CLAUSE, _CLAUSE))


class Refused(Exception):
    pass


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def site_dirs(prefix):
    """Where pip --prefix puts packages: the default "prefix" scheme of this
    interpreter with base and platbase set to prefix (on Debian
    P/local/lib/python3.X/dist-packages, posix_local). The same computation
    as _site_dirs() of mcp-exec-bootstrap.py: both must agree."""
    import sysconfig
    scheme = sysconfig.get_preferred_scheme("prefix")
    v = {"base": prefix, "platbase": prefix}
    out = []
    for key in ("purelib", "platlib"):
        d = sysconfig.get_path(key, scheme, vars=v)
        if d not in out:
            out.append(d)
    return out


def check_wheelhouse(w):
    if not os.path.isabs(w) or not os.path.isdir(w):
        raise Refused("the wheelhouse %s does not exist" % w)
    # Fail closed: a wheelhouse this run could write to could be poisoned
    # for the next one.
    if os.access(w, os.W_OK) and not (os.statvfs(w).f_flag & os.ST_RDONLY):
        raise Refused("the wheelhouse %s is writable from the sandbox; refusing to install from it" % w)


def read_manifest(w):
    """{file name: sha256} of the manifest."""
    out = {}
    try:
        with open(os.path.join(w, MANIFEST), "rb") as f:
            data = f.read(16 << 20)
    except OSError as e:
        raise Refused("the wheelhouse has no manifest %s: %s" % (MANIFEST, e.strerror))
    for line in data.decode("utf-8", "replace").splitlines():
        m = re.fullmatch(r"([0-9a-f]{64}) [ *]([^/\s]+\.whl)", line)
        if m:
            out[m.group(2)] = m.group(1)
    return out


def projects(manifest):
    """{normalized name: [versions]} from the wheels' file names."""
    out = {}
    for fn in manifest:
        parts = fn[:-4].split("-")
        if len(parts) >= 5:
            vs = out.setdefault(normalize(parts[0]), [])
            if parts[1] not in vs:
                vs.append(parts[1])
    for vs in out.values():
        vs.sort(key=_version_key)
    return out


def _version_key(v):
    try:
        from pip._vendor.packaging.version import Version
        return (0, Version(v), v)
    except Exception:       # no pip (said later), or not a PEP 440 version
        return (1, None, v)


def describe(projs, limit=1500):
    text = ", ".join("%s (%s)" % (n, ", ".join(v)) for n, v in sorted(projs.items()))
    return (text[:limit] + "...") if len(text) > limit else (text or "nothing")


class _Tee:
    """pip's sys.stdout and sys.stderr while it runs: to our stderr (the
    caller's log) and kept, to explain a failure."""
    encoding = "utf-8"
    errors = "replace"

    def __init__(self):
        self.kept = []

    def write(self, text):
        data = text.encode("utf-8", "replace")
        os.write(2, data)
        self.kept.append(text)
        del self.kept[:-200]
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    def fileno(self):
        return 2


def pip(args):
    """Runs pip install in this process (its import is most of its start:
    paid once for both runs). Returns its exit status and output."""
    if _pip_main is None:
        raise Refused("pip is not installed for %s (Debian: python3-pip)" % sys.executable)
    tee = _Tee()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = tee
    try:
        # --isolated: no PIP_* variable, no user configuration file.
        rc = _pip_main(["install", "--isolated", "--disable-pip-version-check", "--no-cache-dir", "--no-index",
                        "--only-binary=:all:"] + args)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    finally:
        sys.stdout, sys.stderr = saved
    return rc, "".join(tee.kept)


def explain_failure(err, projs):
    m = re.search(r"satisfies the requirement (%s)(\S*)" % _NAME, err)
    if m:
        name, want = normalize(m.group(1)), m.group(2) or ""
        if name not in projs:
            return "%s is not in the wheelhouse (it has: %s)" % (m.group(1), describe(projs))
        return "no version of %s matching %s in the wheelhouse (it has: %s)" % (
            m.group(1), want or "the request", ", ".join(projs[name]))
    last = [l for l in err.strip().splitlines() if l.strip()][-3:]
    return "pip failed: %s" % (" / ".join(last) or "no output")


def resolve(req, manifest, projs):
    w = os.path.realpath(req["wheelhouse"])
    fd = os.memfd_create("report")
    rc, err = pip(["--dry-run", "--quiet", "--report", "/proc/self/fd/%d" % fd, "--find-links", w,
                   "--prefix", req["prefix"]] + list(req["specs"]))
    if rc != 0:
        raise Refused(explain_failure(err, projs))
    try:
        with open(fd, "rb") as f:
            items = json.loads(f.read(16 << 20)).get("install", [])
    except ValueError:
        raise Refused("pip's report could not be read")
    plan, total = [], 0
    for it in items:
        md = it.get("metadata", {})
        name, version = md.get("name", "?"), md.get("version", "?")
        path = urllib.request.url2pathname(urllib.parse.urlparse(it.get("download_info", {}).get("url", "")).path)
        fn = os.path.basename(path)
        if os.path.dirname(path) != w or fn not in manifest:
            raise Refused("%s %s (%s) is not listed in the wheelhouse manifest" % (name, version, fn or "?"))
        try:
            with zipfile.ZipFile(path) as z:
                total += sum(i.file_size for i in z.infolist())
        except (OSError, zipfile.BadZipFile) as e:
            raise Refused("the wheel %s cannot be read: %s" % (fn, e))
        plan.append((name, version, fn))
    if total > req["max_bytes"]:
        raise Refused("the packages would take %d bytes unpacked, over the limit of %d bytes "
                      "(MCP_EXEC_MAX_INSTALL_BYTES)" % (total, req["max_bytes"]))
    return plan


def shadowed(plan, sites, system):
    """Names of the plan that the system has in another version, and a
    refusal for those an earlier call already put in the packages site."""
    from importlib import metadata
    replaced = []
    for name, version, _ in plan:
        for d in metadata.distributions(name=name, path=sites):
            if d.version != version:
                raise Refused("%s %s is installed in this session already; it cannot be changed to %s"
                              % (name, d.version, version))
        for d in metadata.distributions(name=name, path=system):
            if d.version != version and name not in replaced:
                replaced.append(name)
    return replaced


def install(req, manifest, plan):
    w = os.path.realpath(req["wheelhouse"])
    fd = os.memfd_create("requirements")
    text = "".join("%s==%s --hash=sha256:%s\n" % (n, v, manifest[f]) for n, v, f in plan)
    os.write(fd, text.encode())
    # --ignore-installed: a version the system has is shadowed in the prefix, never
    # uninstalled (shadowed() refused changing one an earlier call put there). pip 25
    # (Debian 13) tries to uninstall the system's copy first, and fails: Debian's own
    # packages have no RECORD file.
    rc, err = pip(["--require-hashes", "--no-deps", "--ignore-installed", "--find-links", w,
                   "--prefix", req["prefix"], "-r", "/proc/self/fd/%d" % fd])
    os.close(fd)
    if rc == 0:
        return
    if "DO NOT MATCH THE HASHES" in err:
        bad = []
        for _, _, fn in plan:
            h = hashlib.sha256()
            with open(os.path.join(w, fn), "rb") as f:
                for b in iter(lambda: f.read(1 << 20), b""):
                    h.update(b)
            if h.hexdigest() != manifest[fn]:
                bad.append(fn)
        raise Refused("the wheel %s: its hash does not match the wheelhouse manifest" % (", ".join(bad) or "?"))
    raise Refused(explain_failure(err, {}))


def run(req):
    specs = req.get("specs")
    if (not isinstance(specs, list) or not specs or not isinstance(req.get("wheelhouse"), str)
            or not isinstance(req.get("prefix"), str) or not isinstance(req.get("max_bytes"), int)):
        raise Refused("malformed request")
    for s in specs:
        # A spec is one requirement; one starting with "-" would be an option.
        if not isinstance(s, str) or len(s) > 128 or not SPEC.fullmatch(s):
            raise Refused("not a valid package spec: %r" % (s,))
    check_wheelhouse(req["wheelhouse"])
    manifest = read_manifest(req["wheelhouse"])
    projs = projects(manifest)
    for s in specs:
        name = SPEC.fullmatch(s).group(1)
        if normalize(name) not in projs:
            raise Refused("%s is not in the wheelhouse (it has: %s)" % (name, describe(projs)))
    sites = site_dirs(req["prefix"])
    check_guard(sites)
    system = list(sys.path)
    # pip sees what the interpreter will see: what an earlier call of a
    # session installed counts as installed (as in _add_sites() of
    # mcp-exec-bootstrap.py: after the standard library).
    i = next((k for k, p in enumerate(sys.path) if p.endswith(("/site-packages", "/dist-packages"))), len(sys.path))
    sys.path[i:i] = sites
    plan = resolve(req, manifest, projs)
    replaced = shadowed(plan, sites, system)
    if replaced and not req.get("allow_replace", True):
        raise Refused("%s would replace the version the interpreter may have imported already; "
                      "ask for it in session_create" % ", ".join(replaced))
    if plan:
        install(req, manifest, plan)
    return {"ok": True, "installed": [{"name": n, "version": v} for n, v, _ in plan], "replaced": replaced}


def main():
    # The answer's fd is ours alone: whatever writes to fd 1 while pip runs
    # (sys.__stdout__) lands in the log.
    answer_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        req = json.loads(sys.stdin.buffer.read(REQUEST_MAX))
        answer = run(req if isinstance(req, dict) else {})
    except Refused as e:
        answer = {"ok": False, "error": str(e)}
    except Exception as e:
        answer = {"ok": False, "error": "the installer failed: %s: %s" % (type(e).__name__, e)}
    data = json.dumps(answer).encode()
    while data:
        data = data[os.write(answer_fd, data):]


if __name__ == "__main__":
    main()
