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
# apart from the program's output.
#
# Two pip runs: a dry run that resolves the specs against the wheelhouse
# (the system's packages count as installed), checked here (every wheel in
# the manifest, the unpacked size under the cap, what it would shadow), then
# the install of exactly that set from a hash-pinned requirements file, so
# that pip itself checks each wheel against the manifest's hash.
import hashlib
import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
import zipfile

MANIFEST = "SHA256SUMS"         # package-spec.h, WHEELHOUSE_MANIFEST
REQUEST_MAX = 1 << 20
STDERR_KEEP = 1 << 16

# package_spec_valid() of package-spec.c, as a regular expression.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_CLAUSE = r"(?:===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9][A-Za-z0-9.*+!_-]*"
SPEC = re.compile(r"(%s)(?:\[%s(?:,%s)*\])?(?:%s(?:,%s)*)?" % (_NAME, _NAME, _NAME, _CLAUSE, _CLAUSE))

# Runs pip with the packages site dirs on sys.path where the interpreter has
# them (site_dirs() in mcp-exec-bootstrap.py): what an earlier call of a
# session installed counts as installed.
PIP_MAIN = """import runpy, sys
sites = [d for d in sys.argv[1].split(":") if d]
i = next((k for k, p in enumerate(sys.path) if p.endswith(("/site-packages", "/dist-packages"))), len(sys.path))
sys.path[i:i] = sites
sys.argv = ["pip"] + sys.argv[2:]
runpy.run_module("pip", run_name="__main__", alter_sys=True)
"""


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
        vs.sort(key=lambda v: [int(x) if x.isdigit() else x for x in re.split(r"[.]", v)] if
                re.fullmatch(r"[0-9.]+", v) else [v])
    return out


def describe(projs, limit=1500):
    text = ", ".join("%s (%s)" % (n, ", ".join(v)) for n, v in sorted(projs.items()))
    return (text[:limit] + "...") if len(text) > limit else (text or "nothing")


def pip(python, sites, args, report=False, pass_fds=()):
    """Runs pip; its output goes to our stderr (the caller's log) and comes
    back as text to explain a failure. report: its stdout is the dry run's
    report, returned apart."""
    cmd = [python, "-I", "-B", "-c", PIP_MAIN, ":".join(sites), "install",
           "--disable-pip-version-check", "--no-cache-dir", "--no-index", "--only-binary=:all:"] + args
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE if report else subprocess.STDOUT, pass_fds=pass_fds)
    text = p.stderr if report else p.stdout
    os.write(2, text[-STDERR_KEEP:])
    return p.returncode, p.stdout if report else b"", text.decode("utf-8", "replace")


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


def resolve(req, sites, manifest, projs):
    w = os.path.realpath(req["wheelhouse"])
    rc, out, err = pip(sys.executable, sites,
                       ["--dry-run", "--quiet", "--report", "-", "--find-links", w, "--prefix", req["prefix"]]
                       + list(req["specs"]), report=True)
    if rc != 0:
        raise Refused(explain_failure(err, projs))
    try:
        items = json.loads(out).get("install", [])
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


def shadowed(plan, sites):
    """Names of the plan that the system has in another version, and a
    refusal for those an earlier call already put in the packages site."""
    from importlib import metadata
    replaced = []
    for name, version, _ in plan:
        for d in metadata.distributions(name=name, path=sites):
            if d.version != version:
                raise Refused("%s %s is installed in this session already; it cannot be changed to %s"
                              % (name, d.version, version))
        try:
            v = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if v != version:
            replaced.append(name)
    return replaced


def install(req, sites, manifest, plan):
    w = os.path.realpath(req["wheelhouse"])
    fd = os.memfd_create("requirements")
    text = "".join("%s==%s --hash=sha256:%s\n" % (n, v, manifest[f]) for n, v, f in plan)
    os.write(fd, text.encode())
    cmd = ["--require-hashes", "--no-deps", "--find-links", w, "--prefix", req["prefix"], "-r", "/dev/fd/%d" % fd]
    rc, _, err = pip(sys.executable, sites, cmd, pass_fds=(fd,))
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
    plan = resolve(req, sites, manifest, projs)
    replaced = shadowed(plan, sites)
    if replaced and not req.get("allow_replace", True):
        raise Refused("%s would replace the version the interpreter may have imported already; "
                      "ask for it in session_create" % ", ".join(replaced))
    if plan:
        install(req, sites, manifest, plan)
    return {"ok": True, "installed": [{"name": n, "version": v} for n, v, _ in plan], "replaced": replaced}


def main():
    try:
        req = json.loads(sys.stdin.buffer.read(REQUEST_MAX))
        answer = run(req if isinstance(req, dict) else {})
    except Refused as e:
        answer = {"ok": False, "error": str(e)}
    except Exception as e:
        answer = {"ok": False, "error": "the installer failed: %s: %s" % (type(e).__name__, e)}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
