#!/usr/bin/env python3
# tests/lib/make-wheels.py - the wheels of test-packages (issue 23), made by hand with zipfile: no
# build tools, no network. Pure Python, py3-none-any:
#   pkga 1.0, pkga 2.0     pkga.VERSION is the version, pkga.__file__ says where it was installed
#   pkgb 1.0               Requires-Dist: pkga; pkgb.uses() imports pkga
#   numpy 99.0             numpy.__version__ == "99.0": shadows the system's (and the preload's)
#   evil/pkga 1.0          same file name as pkga 1.0, other bytes: its import prints MARKER
#
#   make-wheels.py DIR MARKER      writes DIR/*.whl and DIR/evil/pkga-1.0-py3-none-any.whl
import importlib.util, os, sys

_spec = importlib.util.spec_from_file_location("make_wheel", os.path.join(os.path.dirname(__file__), "make-wheel.py"))
_mw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mw)
out, marker = sys.argv[1], sys.argv[2]


def wheel(d, name, version, files, requires=()):
    return _mw.make_wheel(d, name, version, requires, files)


for v in ("1.0", "2.0"):
    wheel(out, "pkga", v, {"pkga/__init__.py": b"VERSION = '%s'\n" % v.encode()})
wheel(out, "pkgb", "1.0", {"pkgb/__init__.py": b"import pkga\n\ndef uses():\n    return 'pkgb uses pkga ' + pkga.VERSION\n"},
      requires=["pkga"])
wheel(out, "numpy", "99.0", {"numpy/__init__.py": b"__version__ = '99.0'\nFAKE = True\n"})
wheel(os.path.join(out, "evil"), "pkga", "1.0",
      {"pkga/__init__.py": b"print(%r, flush=True)\nVERSION = '1.0'\n" % marker})
