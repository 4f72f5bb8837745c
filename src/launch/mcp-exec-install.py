# SPDX-License-Identifier: LGPL-2.1-or-later
# mcp-exec-install: installs a run's "packages" (issues 23 and 41,
# launch-packages.h). Started by the launcher's trusted parent inside the
# run's sandbox, before the code is read, as
#
#     PYTHON -I -B mcp-exec-install.py
#
# (a warm unit starts it beside its interpreter, before any run: what it
# imports is then off the caller's time; it waits for its request), with the
# request as one JSON object on stdin:
#     {"wheelhouse": W, "prefix": P, "specs": [...], "max_bytes": N, "allow_replace": bool, "python": EXE}
# and its answer as one JSON object on stdout:
#     {"ok": bool, "error": "...", "installed": [{"name", "version"}], "replaced": [...],
#      "modules": [top-level module names the install added], "pth": bool}
# pip's output (or the store's word on what it did) goes to stderr, which
# the launcher keeps (a bounded tail) apart from the program's output;
# nothing else writes to stdout.
#
# Where the packages go: the run's user site, PYTHONUSERBASE=P (the code's
# environment has it, so every interpreter the code starts sees them too:
# `python3 -c`, `-m`, console scripts, multiprocessing), on Debian
# P/lib/python3.X/site-packages, scripts in P/bin (on the code's PATH).
#
# W is the package store (docs/packages.md, "The package store") when it
# holds index.json: the operator's tool unpacked every listed wheel there
# once, checked against its hash, as W/trees/SHA256, and W/wheels holds
# the checked copies. Then the specs are resolved here against the index,
# with pip's rules (its vendored packaging: specifiers, markers, extras,
# Requires-Python, wheel tags; the system's distributions count as
# installed; the highest version that fits; the same size cap, the same
# refusals), and the chosen trees are made visible by one generated .pth in
# the user site that lists them: nothing is copied. What this resolution
# cannot decide on its own (a conflict that needs pip's backtracking, a
# direct reference, a wheel with data files, ...) goes to pip, with the
# store's checked copies and the index's hashes, as a plain wheelhouse
# (SHA256SUMS, no index.json) always does:
#
# two pip runs, in this process: a dry run that resolves the specs against
# the wheelhouse (the system's packages count as installed), checked here (every wheel in
# the manifest, the unpacked size under the cap, what it would shadow), then
# the install of exactly that set from a hash-pinned requirements file, so
# that pip itself checks each wheel against the manifest's hash.
#
# In a session the packages site is the session's, which its code can write
# (issue 37): nothing is imported from it. The resolution here only reads
# metadata (data) there; pip, and everything it is known to import, is
# imported while sys.path is still the interpreter's own (-I: the standard
# library and the system's packages); all imports come from that path only
# (_SystemPathOnly), so a pip/ or _manylinux.py an earlier call left in the
# site never runs here. pip runs --isolated: no PIP_* variable, no user
# configuration ($HOME, XDG dirs); the launcher gives it an unwritable HOME
# and / as its working directory (launch-installer.c).
import importlib
import importlib.machinery
import json
import os
import re
import sys

os.chdir("/")


def _packaging():
    """pip's own packaging (the rules pip applies), else the system's; None: neither."""
    for base in ("pip._vendor.packaging", "packaging"):
        try:
            return tuple(importlib.import_module(base + "." + m) for m in ("version", "specifiers", "requirements",
                                                                            "markers", "tags"))
        except Exception:
            continue
    return None


# What the store's resolution needs, imported now: when started ahead of its
# request (a warm unit), before the caller waits.
PACKAGING = _packaging()
from importlib import metadata  # noqa: E402
_pip_main = None


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


def _system_paths():
    """The interpreter's own package directories (where the site goes in front of)."""
    i = next((k for k, p in enumerate(sys.path) if p.endswith(("/site-packages", "/dist-packages"))), len(sys.path))
    return [p for p in sys.path[i:] if os.path.isabs(p)]


SYSTEM = _system_paths()
if PACKAGING is not None:
    # Caches filled ahead too: the system's distributions, the markers'
    # environment.
    list(metadata.distributions(name="mcp-exec-warm-up", path=SYSTEM))
    MARKER_ENV = PACKAGING[3].default_environment()
_TAGS = None


def tag_priority(tag):
    """Where this interpreter's wheel tags, in pip's order of preference,
    have tag (0: the best), or None. A pure-Python wheel's needs no list."""
    global _TAGS
    if tag == "py3-none-any":
        return 1 << 20
    if tag.startswith("py2-"):
        return None
    if _TAGS is None:
        _TAGS = {str(t): k for k, t in enumerate(PACKAGING[4].sys_tags())}
    return _TAGS.get(tag)


def _rehearse():
    """What a resolution from the store does once, done ahead with nothing
    of the run's: the lazy imports and caches of packaging (the wheel tags,
    the markers' environment, the parsers), sysconfig and the path finder."""
    site_dirs("/nonexistent")
    tag_priority("cp3-none-any")
    r = PACKAGING[2].Requirement('mcp-exec-warm-up[x]>=1,!=2.*; python_version >= "3" and extra == "x"')
    r.marker.evaluate({"extra": "x"})
    list(r.specifier.filter(["1.0", "2.0rc1"]))
    r.specifier.contains("1.0", prereleases=True)
    system_provides({"mcp_exec_warm_up"})
    json.dumps({"ok": True})


def check_guard(sites):
    """Fail closed if the guard is not in place, or would trust the site."""
    if _GUARD not in sys.meta_path:
        raise Refused("cannot restrict the installer's imports (no path finder to replace)")
    for d in sites:
        if _GUARD._ok(d):
            raise Refused("the packages site %s is under the interpreter's own path; refusing to install" % d)


MANIFEST = "SHA256SUMS"         # package-spec.h, WHEELHOUSE_MANIFEST
INDEX = "index.json"            # the package store's, docs/packages.md
INDEX_MAX = 64 << 20
PTH = "mcp-exec-packages.pth"   # in the user site: the trees, in order
REQUEST_MAX = 1 << 20
MODULES_MAX = 1024              # names in an answer; past that "*": any

# package_spec_valid() of package-spec.c, as a regular expression.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_CLAUSE = r"(?:===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9][A-Za-z0-9.*+!_-]*"
SPEC = re.compile(r"(%s)(?:\[(%s(?:,%s)*)\])?((?:%s(?:,%s)*)?)" % (_NAME, _NAME, _NAME, _CLAUSE, _CLAUSE))
_SHA = re.compile(r"[0-9a-f]{64}")
_WHEEL_FILE = re.compile(r"[^/\s]+\.whl")
# An entry point, as pip's distlib reads it; a script's name as it may be a file's.
_ENTRY = re.compile(r"\s*(\w+(?:\.\w+)*)\s*:\s*(\w+(?:\.\w+)*)\s*(?:\[[^\]]*\])?\s*")
_SCRIPT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_SITEDIR_LINE = re.compile(r"import site; site\.addsitedir\('(/[^'\\\n]*)'\)")


class Refused(Exception):
    pass


class Undecided(Exception):
    """What the store's resolution cannot decide on its own: pip does."""


def log(text):
    os.write(2, ("mcp-exec-install: %s\n" % text).encode("utf-8", "replace"))


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def site_dirs(prefix):
    """The user site of PYTHONUSERBASE=prefix (on Debian
    P/lib/python3.X/site-packages), as every interpreter of the run computes
    it, and its scripts directory. The same computation as _site_dirs() of
    mcp-exec-bootstrap.py: both must agree."""
    import sysconfig
    try:
        scheme = sysconfig.get_preferred_scheme("user")
    except AttributeError:                      # before 3.10
        scheme = "%s_user" % os.name
    v = {"userbase": prefix}
    out = []
    for key in ("purelib", "platlib"):
        d = sysconfig.get_path(key, scheme, vars=v)
        if d not in out:
            out.append(d)
    return out, sysconfig.get_path("scripts", scheme, vars=v)


def check_wheelhouse(w, store):
    if not os.path.isabs(w) or not os.path.isdir(w):
        raise Refused("the wheelhouse %s does not exist" % w)
    # Fail closed: a wheelhouse this run could write to could be poisoned
    # for the next one.
    for d in [w] + ([os.path.join(w, "trees"), os.path.join(w, "wheels")] if store else []):
        if os.path.isdir(d) and os.access(d, os.W_OK) and not (os.statvfs(d).f_flag & os.ST_RDONLY):
            raise Refused("the wheelhouse %s is writable from the sandbox; refusing to install from it" % d)


def read_manifest(w):
    """{file name: sha256} of the manifest."""
    out = {}
    try:
        with open(os.path.join(w, MANIFEST), "rb") as f:
            data = f.read(16 << 20)
    except OSError as e:
        raise Refused("the package store has no %s and no manifest %s (%s): the operator makes it with "
                      "`mcp-exec wheels prepare`" % (INDEX, MANIFEST, e.strerror))
    for line in data.decode("utf-8", "replace").splitlines():
        m = re.fullmatch(r"([0-9a-f]{64}) [ *]([^/\s]+\.whl)", line)
        if m:
            out[m.group(2)] = m.group(1)
    return out


def read_index(w):
    """The store's index entries (those with a name, version, file and
    sha256: any other is not listed, so never installed), or None when W
    has no index.json (a plain wheelhouse)."""
    try:
        fd = os.open(os.path.join(w, INDEX), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise Refused("the package store's %s cannot be read: %s" % (INDEX, e.strerror))
    with open(fd, "rb") as f:
        data = f.read(INDEX_MAX + 1)
    try:
        idx = json.loads(data) if len(data) <= INDEX_MAX else None
    except ValueError:
        idx = None
    if not isinstance(idx, dict) or idx.get("version") != 1 or not isinstance(idx.get("wheels"), list):
        raise Refused("the package store's %s is not a version 1 index (mcp-exec wheels prepare)" % INDEX)
    return [e for e in idx["wheels"] if isinstance(e, dict) and all(isinstance(e.get(k), str) for k in
                                                                   ("name", "version", "file", "sha256"))
            and _WHEEL_FILE.fullmatch(e["file"]) and _SHA.fullmatch(e["sha256"])]


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
        return (0, PACKAGING[0].Version(v), v)
    except Exception:       # no packaging (said later), or not a PEP 440 version
        return (1, None, v)


def describe(projs, limit=1500):
    text = ", ".join("%s (%s)" % (n, ", ".join(v)) for n, v in sorted(projs.items()))
    return (text[:limit] + "...") if len(text) > limit else (text or "nothing")


def wheel_modules(names):
    """The top-level modules a wheel's files (paths in it) put on sys.path
    (a directory with .py or .so files in it, a .py or .so file: the name
    up to its first dot), and whether it has a .pth at the top."""
    mods, pth = set(), False
    for n in names:
        parts = n.split("/")
        if parts[0].endswith(".dist-info"):
            continue
        if parts[0].endswith(".data"):
            if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                continue
            parts = parts[2:]
        if len(parts) == 1:
            pth = pth or parts[0].endswith(".pth")
            if parts[0].endswith((".py", ".so", ".pyc")):
                mods.add(parts[0].split(".")[0])
        elif parts[-1].endswith((".py", ".so", ".pyc")):
            mods.add(parts[0])
    return mods, pth


def system_provides(mods):
    """Those of mods that the system's package directories have."""
    return {m for m in mods if m.isidentifier() and importlib.machinery.PathFinder.find_spec(m, SYSTEM) is not None}


# --- the site: the .pth that lists the trees, and the scripts ----------------------------------


def _read_small(path, limit=1 << 20):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with open(fd, "rb") as f:
        return f.read(limit)


def pth_lines(site):
    data = _read_small(os.path.join(site, PTH))
    return data.decode("utf-8", "replace").splitlines() if data else []


def pth_paths(lines):
    """The directories the .pth's lines put on sys.path (a tree with .pth
    files of its own is an addsitedir line), in order."""
    out = []
    for line in lines:
        m = _SITEDIR_LINE.fullmatch(line)
        p = m.group(1) if m else line
        if p.startswith("/") and p not in out:
            out.append(p)
    return out


def _write(path, data, mode):
    """Written whole under a temporary name, then renamed over path (what
    was there, a link too, is replaced, never followed)."""
    tmp = "%s.tmp-%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        with open(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def shebang(python):
    """As pip's script maker writes it (distlib, _build_shebang)."""
    exe = python.encode()
    if b" " not in exe and len(exe) + 3 <= 127:
        return b"#!" + exe + b"\n"
    return b"#!/bin/sh\n'''exec' " + exe + b' "$0" "$@"\n' + b"' '''\n"


SCRIPT_TEMPLATE = """# -*- coding: utf-8 -*-
import re
import sys
from %(module)s import %(import_name)s
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(%(func)s())
"""


def scripts_of(tree, e, python):
    """{file name in bin: bytes} of a tree's console and GUI scripts (as pip
    generates them) and its .data/scripts (a "#!python" first line becomes
    this interpreter)."""
    out = {}
    for key in ("console_scripts", "gui_scripts"):
        d = e.get(key) or {}
        if not isinstance(d, dict):
            raise Undecided("%s of %s is not a table" % (key, e["file"]))
        for name, value in d.items():
            m = _ENTRY.fullmatch(value) if isinstance(value, str) else None
            if not _SCRIPT_NAME.fullmatch(name) or not m or name.startswith(("pip", "easy_install")):
                raise Undecided("the entry point %r of %s" % (name, e["file"]))
            func = m.group(2)
            out[name] = shebang(python) + (SCRIPT_TEMPLATE % {"module": m.group(1), "import_name": func.split(".")[0],
                                                             "func": func}).encode()
    for rel in e.get("scripts") or []:
        if (not isinstance(rel, str) or not rel.startswith(".scripts/") or "/" in rel[9:]
                or not _SCRIPT_NAME.fullmatch(rel[9:])):
            raise Undecided("the script %r of %s" % (rel, e["file"]))
        data = _read_small(os.path.join(tree, rel), 64 << 20)
        if data is None:
            raise Undecided("the script %s of %s is not in its tree" % (rel, e["file"]))
        if data.startswith(b"#!python"):
            # pip's fix_script(): the whole first line.
            data = b"#!" + python.encode() + b"\n" + (data.split(b"\n", 1)[1:] or [b""])[0]
        out[rel[9:]] = data
    return out


def write_site(sites, plan):
    """The trees of plan, after those the site lists already, in its .pth;
    their scripts in the scripts directory."""
    site, bin_dir = sites[0][0], sites[1]
    os.makedirs(site, exist_ok=True)
    lines = pth_lines(site)
    for p in plan:
        line = ("import site; site.addsitedir(%r)" % p["tree"]) if p["pth"] else p["tree"]
        if line not in lines:
            lines.append(line)
    scripts = {}
    for p in plan:
        scripts.update(p["scripts"])
    if scripts:
        os.makedirs(bin_dir, exist_ok=True)
        for name, data in scripts.items():
            _write(os.path.join(bin_dir, name), data, 0o755)
    _write(os.path.join(site, PTH), ("\n".join(lines) + "\n").encode(), 0o644)


# --- the store's resolution ------------------------------------------------------------------------


class Pin:
    def __init__(self, version, entry=None, dist=None):
        self.version, self.entry, self.dist, self.extras = version, entry, dist, set()


class StoreResolver:
    """The specs against the index, as pip resolves them against the
    wheelhouse when nothing conflicts: breadth first, a project's
    installed version if it fits (the site's first, then the system's),
    else the highest one in the index that fits the specifier (pre-releases
    only when asked for or when nothing else fits), the wheel tags and
    Requires-Python of this interpreter, and then its dependencies for the
    extras asked for. A requirement that the version already chosen does
    not fit would need pip's backtracking: Undecided."""

    def __init__(self, entries, installed_paths):
        self.V, self.S, self.R = PACKAGING[0].Version, PACKAGING[1].SpecifierSet, PACKAGING[2].Requirement
        self.by_name = {}
        for e in entries:
            self.by_name.setdefault(normalize(e["name"]), []).append(e)
        self.paths = installed_paths
        self.pins = {}
        self.python = MARKER_ENV["python_full_version"]

    def installed(self, name):
        for d in metadata.distributions(name=name, path=self.paths):
            try:
                return Pin(self.V(d.version), dist=d)
            except Exception:
                raise Undecided("the installed %s has the version %r" % (name, d.version))
        return None

    def candidates(self, name, spec):
        ok, python_skipped = {}, False
        for e in self.by_name.get(name, []):
            tags, rp = e.get("tags"), e.get("requires_python")
            # A build tag (six parts) would take pip's order among builds too.
            if (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)
                    or len(e["file"][:-4].split("-")) != 5):
                raise Undecided("the tags of %s" % e["file"])
            prio = min((p for p in map(tag_priority, tags) if p is not None), default=None)
            if prio is None:
                continue
            try:
                if rp is not None and not self.S(rp).contains(self.python, prereleases=True):
                    python_skipped = True
                    continue
                v = self.V(e["version"])
            except Exception:
                raise Undecided("the version or Requires-Python of %s" % e["file"])
            if v not in ok or prio < ok[v][0]:
                ok[v] = (prio, e)
        versions = list(spec.filter([str(v) for v in ok]))
        if not versions and python_skipped:
            # pip says that in words of its own.
            raise Undecided("%s: the versions that fit %s require another Python" % (name, spec))
        if not versions:
            return None
        best = max(self.V(v) for v in versions)
        return Pin(best, entry=ok[best][1])

    def requirement(self, line):
        try:
            r = self.R(line)
        except Exception:
            raise Undecided("the requirement %r" % line)
        if getattr(r, "url", None):
            raise Undecided("the direct reference %r" % line)
        return r

    def dependencies(self, pin, extras):
        """pin's requirements: without extras (None) those for the project
        itself, else those the extras add."""
        if pin.entry is not None:
            lines = pin.entry.get("requires_dist") or []
            if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
                raise Undecided("the requirements of %s" % pin.entry["file"])
        else:
            lines = pin.dist.requires or []
        out = []
        for line in lines:
            r = self.requirement(line)
            try:
                if r.marker is None:
                    use = extras is None
                elif extras is None:
                    use = r.marker.evaluate({"extra": ""})
                else:
                    use = any(r.marker.evaluate({"extra": x}) for x in extras)
            except Exception:
                raise Undecided("the marker of %r" % line)
            if use:
                out.append(r)
        return out

    def resolve(self, top):
        """top: [(Requirement, spec as given)]. Returns the pins, in the
        order chosen."""
        queue = [(r, s) for r, s in top]
        while queue:
            r, given = queue.pop(0)
            name = normalize(r.name)
            pin = self.pins.get(name)
            if pin is not None:
                if not r.specifier.contains(pin.version, prereleases=True):
                    raise Undecided("%s %s does not fit %s" % (name, pin.version, r))
            else:
                pin = self.installed(name)
                if pin is None or not r.specifier.contains(pin.version, prereleases=True):
                    pin = self.candidates(name, r.specifier)
                    if pin is None:
                        self.none_fits(r, given, len(top))
                self.pins[name] = pin
                queue += [(d, None) for d in self.dependencies(pin, None)]
            new = set(r.extras) - pin.extras
            if new:
                pin.extras |= new
                queue += [(d, None) for d in self.dependencies(pin, sorted(new))]
        return self.pins

    def none_fits(self, r, given, n_top):
        """No version fits: pip's refusal for a spec of the call's own (alone:
        with several, which pip names first is pip's to say), else pip's."""
        if given is None or n_top != 1:
            raise Undecided("no version of %s fits %s" % (r.name, r))
        raise NoVersion(r)


class NoVersion(Exception):
    pass


def tree_name(tree, e):
    """The project's name as its METADATA writes it (what pip reports)."""
    try:
        infos = [n for n in os.listdir(tree) if n.endswith(".dist-info")]
    except OSError:
        raise Undecided("no tree for %s" % e["file"])
    if any(n.endswith(".data") for n in os.listdir(tree)):
        raise Undecided("%s has data files" % e["file"])
    for n in infos:
        if normalize(n[:-10].rsplit("-", 1)[0]) == normalize(e["name"]):
            data = _read_small(os.path.join(tree, n, "METADATA"), 1 << 16) or b""
            m = re.search(rb"^Name: *([^\r\n]+)", data, re.M)
            if m:
                return m.group(1).decode("utf-8", "replace").strip()
    return e["name"]


def fast(req, entries, projs, sites):
    """The install from the store: an answer, or None for pip."""
    store, prefix_site = os.path.realpath(req["wheelhouse"]), sites[0]
    trees = pth_paths(pth_lines(prefix_site[0]))
    session = prefix_site + trees
    top = []
    try:
        if PACKAGING is None:
            raise Undecided("no packaging module")
        res = StoreResolver(entries, session + SYSTEM)
        for s in req["specs"]:
            m = SPEC.fullmatch(s)
            r = res.requirement(s)
            top.append((r, m.group(1)))
        pins = res.resolve(top)
        plan, total = [], 0
        for name, pin in pins.items():
            e = pin.entry
            if e is None:
                continue
            tree = os.path.join(store, "trees", e["sha256"])
            tl, pth, size = e.get("top_level"), e.get("pth"), e.get("unpacked_bytes")
            if (not isinstance(tl, list) or not all(isinstance(x, str) for x in tl) or not isinstance(pth, list)
                    or not isinstance(size, int) or isinstance(size, bool) or size < 0):
                raise Undecided("the index entry of %s" % e["file"])
            plan.append({"name": tree_name(tree, e), "version": e["version"], "tree": tree, "modules": set(tl),
                         "pth": bool(pth), "scripts": scripts_of(tree, e, req.get("python") or sys.executable)})
            total += size
    except Undecided as e:
        log("the package store cannot decide this on its own (%s): pip does" % e)
        return None
    except NoVersion as e:
        r = e.args[0]
        name = top[0][1]
        want = ("[%s]" % ",".join(sorted(r.extras)) if r.extras else "") + str(r.specifier)
        raise Refused("no version of %s matching %s in the wheelhouse (it has: %s)"
                      % (name, want or "the request", ", ".join(projs.get(normalize(name), []))))
    if total > req["max_bytes"]:
        raise Refused("the packages would take %d bytes unpacked, over the limit of %d bytes "
                      "(MCP_EXEC_MAX_INSTALL_BYTES)" % (total, req["max_bytes"]))
    replaced = shadowed([(p["name"], p["version"], p["modules"]) for p in plan], session, req)
    if plan:
        write_site(sites, plan)
    log("from the package store: %s" % (", ".join("%s %s" % (p["name"], p["version"]) for p in plan)
                                        or "nothing new (all installed)"))
    return answer(plan, replaced)


def answer(plan, replaced):
    mods = sorted(set().union(*(p["modules"] for p in plan))) if plan else []
    return {"ok": True, "installed": [{"name": p["name"], "version": p["version"]} for p in plan],
            "replaced": replaced, "modules": mods if len(mods) <= MODULES_MAX else ["*"],
            "pth": any(p["pth"] for p in plan)}


# --- pip: a plain wheelhouse, and what the store cannot decide --------------------------------------


def load_pip(prefix, site):
    """pip, imported now, while sys.path is still the interpreter's own;
    its user scheme is the run's site (site and sysconfig read
    PYTHONUSERBASE once, maybe already: set there too)."""
    global _pip_main
    if _pip_main is not None:
        return
    import site as site_module
    import sysconfig
    os.environ["PYTHONUSERBASE"] = prefix
    site_module.USER_BASE, site_module.USER_SITE = prefix, site
    sysconfig.get_config_vars()["userbase"] = prefix
    try:
        from pip._internal.cli.main import main
    except Exception:           # no pip (said when it is needed), or a broken one
        return
    # What an install imports after pip's main (pip 23.0: seen with a tracer);
    # others load through _SystemPathOnly. pkg_resources before all: it reads
    # sys.path once, when imported, and may then load namespace packages of
    # what it finds there without asking sys.meta_path.
    for m in ("sysconfig", "importlib.metadata", "compileall", "py_compile", "pip._vendor.pkg_resources",
              "pip._internal.metadata.pkg_resources", "pip._internal.metadata.importlib",
              "pip._internal.commands.install", "pip._internal.resolution.resolvelib.resolver",
              "pip._internal.resolution.resolvelib.factory", "pip._internal.operations.install.wheel",
              "pip._internal.operations.prepare", "pip._internal.models.installation_report",
              "pip._internal.network.session", "pip._internal.self_outdated_check", "pip._vendor.packaging.version",
              "pip._vendor.packaging.tags", "pip._internal.cli.cmdoptions"):
        try:
            importlib.import_module(m)
        except Exception:       # another pip: left to the guard
            pass
    _pip_main = main


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
                        "--only-binary=:all:", "--user"] + args)
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


def resolve(req, links, manifest, projs, entries):
    import urllib.parse
    import urllib.request
    import zipfile
    fd = os.memfd_create("report")
    rc, err = pip(["--dry-run", "--quiet", "--report", "/proc/self/fd/%d" % fd, "--find-links", links]
                  + list(req["specs"]))
    if rc != 0:
        raise Refused(explain_failure(err, projs))
    try:
        with open(fd, "rb") as f:
            items = json.loads(f.read(16 << 20)).get("install", [])
    except ValueError:
        raise Refused("pip's report could not be read")
    by_file = {e["file"]: e for e in entries or []}
    plan, total = [], 0
    for it in items:
        md = it.get("metadata", {})
        name, version = md.get("name", "?"), md.get("version", "?")
        path = urllib.request.url2pathname(urllib.parse.urlparse(it.get("download_info", {}).get("url", "")).path)
        fn = os.path.basename(path)
        if os.path.dirname(path) != links or fn not in manifest:
            raise Refused("%s %s (%s) is not listed in the wheelhouse manifest" % (name, version, fn or "?"))
        try:
            with zipfile.ZipFile(path) as z:
                infos = z.infolist()
        except (OSError, zipfile.BadZipFile) as e:
            raise Refused("the wheel %s cannot be read: %s" % (fn, e))
        e = by_file.get(fn)
        mods, pth = wheel_modules(i.filename for i in infos)
        if e is not None and isinstance(e.get("top_level"), list):
            mods |= {m for m in e["top_level"] if isinstance(m, str)}
        total += sum(i.file_size for i in infos)
        plan.append({"name": name, "version": version, "file": fn, "modules": mods, "pth": pth})
    if total > req["max_bytes"]:
        raise Refused("the packages would take %d bytes unpacked, over the limit of %d bytes "
                      "(MCP_EXEC_MAX_INSTALL_BYTES)" % (total, req["max_bytes"]))
    return plan


def shadowed(plan, session, req):
    """Names of the plan (name, version, modules) that would shadow what the
    system has: another version of the same project, or a module of the
    same name (another project's: a fork); and a refusal for those an
    earlier call already put in the packages site, or for any of them when
    nothing may be shadowed any more."""
    replaced = []
    for name, version, mods in plan:
        for d in metadata.distributions(name=name, path=session):
            if d.version != version:
                raise Refused("%s %s is installed in this session already; it cannot be changed to %s"
                              % (name, d.version, version))
        other = any(d.version != version for d in metadata.distributions(name=name, path=SYSTEM))
        if (other or system_provides(mods)) and name not in replaced:
            replaced.append(name)
    if replaced and not req.get("allow_replace", True):
        raise Refused("%s would replace the version the interpreter may have imported already; "
                      "ask for it in session_create" % ", ".join(replaced))
    return replaced


def install(links, manifest, plan):
    fd = os.memfd_create("requirements")
    text = "".join("%s==%s --hash=sha256:%s\n" % (p["name"], p["version"], manifest[p["file"]]) for p in plan)
    os.write(fd, text.encode())
    extra = []
    try:
        from pip._internal.cli import cmdoptions
        if hasattr(cmdoptions, "override_externally_managed"):
            # PEP 668's marker speaks of the system's site; this is the run's own.
            extra.append("--break-system-packages")
    except Exception:
        pass
    # --ignore-installed: a version the system has is shadowed in the site, never
    # uninstalled (shadowed() refused changing one an earlier call put there). pip 25
    # (Debian 13) tries to uninstall the system's copy first, and fails: Debian's own
    # packages have no RECORD file.
    rc, err = pip(extra + ["--no-warn-script-location", "--require-hashes", "--no-deps", "--ignore-installed",
                           "--find-links", links, "-r", "/proc/self/fd/%d" % fd])
    os.close(fd)
    if rc == 0:
        return
    if "DO NOT MATCH THE HASHES" in err:
        import hashlib
        bad = []
        for p in plan:
            h = hashlib.sha256()
            with open(os.path.join(links, p["file"]), "rb") as f:
                for b in iter(lambda: f.read(1 << 20), b""):
                    h.update(b)
            if h.hexdigest() != manifest[p["file"]]:
                bad.append(p["file"])
        raise Refused("the wheel %s: its hash does not match the wheelhouse manifest" % (", ".join(bad) or "?"))
    raise Refused(explain_failure(err, {}))


def with_pip(req, manifest, projs, sites, entries):
    """The install by pip: from the wheelhouse, or the store's checked copies
    (entries: its index) with the index's hashes."""
    w = req["wheelhouse"]
    links = os.path.realpath(os.path.join(w, "wheels") if entries is not None else w)
    load_pip(req["prefix"], sites[0][0])
    trees = pth_paths(pth_lines(sites[0][0])) if entries is not None else []
    # pip sees what the interpreter will see: what an earlier call of a
    # session installed counts as installed (as in _add_sites() of
    # mcp-exec-bootstrap.py: after the standard library).
    i = next((k for k, p in enumerate(sys.path) if p.endswith(("/site-packages", "/dist-packages"))), len(sys.path))
    sys.path[i:i] = sites[0] + trees
    plan = resolve(req, links, manifest, projs, entries)
    replaced = shadowed([(p["name"], p["version"], p["modules"]) for p in plan], sites[0] + trees, req)
    if plan:
        install(links, manifest, plan)
    return answer(plan, replaced)


def run(req):
    specs = req.get("specs")
    if (not isinstance(specs, list) or not specs or not isinstance(req.get("wheelhouse"), str)
            or not isinstance(req.get("prefix"), str) or not isinstance(req.get("max_bytes"), int)
            or not isinstance(req.get("python", ""), str)):
        raise Refused("malformed request")
    for s in specs:
        # A spec is one requirement; one starting with "-" would be an option.
        if not isinstance(s, str) or len(s) > 128 or not SPEC.fullmatch(s):
            raise Refused("not a valid package spec: %r" % (s,))
    w = req["wheelhouse"]
    entries = read_index(w) if os.path.isabs(w) else None
    check_wheelhouse(w, entries is not None)
    manifest = read_manifest(w) if entries is None else {e["file"]: e["sha256"] for e in entries}
    projs = projects(manifest)
    for s in specs:
        name = SPEC.fullmatch(s).group(1)
        if normalize(name) not in projs:
            raise Refused("%s is not in the wheelhouse (it has: %s)" % (name, describe(projs)))
    sites = site_dirs(req["prefix"])
    check_guard(sites[0])
    if entries is not None:
        ans = fast(req, entries, projs, sites)
        if ans is not None:
            return ans
    return with_pip(req, manifest, projs, sites, entries)


def main():
    if PACKAGING is not None:
        try:
            _rehearse()
        except Exception:       # then it is done on the caller's time
            pass
    # The answer's fd is ours alone: whatever writes to fd 1 while pip runs
    # (sys.__stdout__) lands in the log.
    answer_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        req = json.loads(sys.stdin.buffer.read(REQUEST_MAX))
        ans = run(req if isinstance(req, dict) else {})
    except Refused as e:
        ans = {"ok": False, "error": str(e)}
    except Exception as e:
        ans = {"ok": False, "error": "the installer failed: %s: %s" % (type(e).__name__, e)}
    data = json.dumps(ans).encode()
    while data:
        data = data[os.write(answer_fd, data):]
    # Done: no teardown of what pip and packaging imported (milliseconds,
    # on the caller's time: the launcher waits for the end of our output).
    os._exit(0)


if __name__ == "__main__":
    main()
