#!/usr/bin/env python3
# tests/lib/make-wheels.py - the wheels of test-packages (issue 23), made by hand with zipfile: no
# build tools, no network. Pure Python, py3-none-any:
#   pkga 1.0, pkga 2.0     pkga.VERSION is the version, pkga.__file__ says where it was installed
#   pkgb 1.0               Requires-Dist: pkga; pkgb.uses() imports pkga
#   numpy 99.0             numpy.__version__ == "99.0": shadows the system's (and the preload's)
#   evil/pkga 1.0          same file name as pkga 1.0, other bytes: its import prints MARKER
#
#   make-wheels.py DIR MARKER      writes DIR/*.whl and DIR/evil/pkga-1.0-py3-none-any.whl
import base64, hashlib, os, sys, zipfile

out, marker = sys.argv[1], sys.argv[2]


def wheel(d, name, version, files, requires=()):
    dist = "%s-%s.dist-info" % (name, version)
    meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    meta += "".join("Requires-Dist: %s\n" % r for r in requires)
    files = dict(files)
    files[dist + "/METADATA"] = meta.encode()
    files[dist + "/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: mcp-exec-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = ""
    for n, data in files.items():
        h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += "%s,sha256=%s,%d\n" % (n, h, len(data))
    files[dist + "/RECORD"] = (record + dist + "/RECORD,,\n").encode()
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "%s-%s-py3-none-any.whl" % (name, version))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in files.items():
            # A fixed date: the same bytes every time (the hash check must not pass by luck).
            z.writestr(zipfile.ZipInfo(n, (2020, 1, 1, 0, 0, 0)), data)
    return path


for v in ("1.0", "2.0"):
    wheel(out, "pkga", v, {"pkga/__init__.py": b"VERSION = '%s'\n" % v.encode()})
wheel(out, "pkgb", "1.0", {"pkgb/__init__.py": b"import pkga\n\ndef uses():\n    return 'pkgb uses pkga ' + pkga.VERSION\n"},
      requires=["pkga"])
wheel(out, "numpy", "99.0", {"numpy/__init__.py": b"__version__ = '99.0'\nFAKE = True\n"})
wheel(os.path.join(out, "evil"), "pkga", "1.0",
      {"pkga/__init__.py": b"print(%r, flush=True)\nVERSION = '1.0'\n" % marker})
