#!/usr/bin/env python3
# tests/lib/make-wheels.py - the wheels of test-packages (issue 23), made by hand with zipfile: no
# build tools, no network. Pure Python, py3-none-any:
#   pkga 1.0, pkga 2.0     pkga.VERSION is the version, pkga.__file__ says where it was installed
#   pkgb 1.0               Requires-Dist: pkga; pkgb.uses() imports pkga
#   numpy 99.0             numpy.__version__ == "99.0": shadows the system's (and the preload's)
#   evil/pkga 1.0          same file name as pkga 1.0, other bytes: its import prints MARKER
# and, for the package store's part (issue 41):
#   kiwi 1.0               needs pkga; kiwi/__main__.py, a console script `kiwi` (kiwi.cli:main) and a
#                          .data script `kiwi-tool` (#!python), each printing what it is
#   numfork 1.0            ships a top-level numpy (another project's name): __version__ "98.0-fork"
#   numpth 1.0             ships numpth.pth, which puts numpth_dir (holding a numpy, "97.0-pth") on sys.path
#   numext 1.0             a top-level numpy that is an extension module ("96.0-ext"), built with gcc for
#                          this interpreter when gcc and Python.h are there (else no such wheel)
#
#   make-wheels.py DIR MARKER      writes DIR/*.whl and DIR/evil/pkga-1.0-py3-none-any.whl
import importlib.util, os, sys

_spec = importlib.util.spec_from_file_location("make_wheel", os.path.join(os.path.dirname(__file__), "make-wheel.py"))
_mw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mw)
out, marker = sys.argv[1], sys.argv[2]


def wheel(d, name, version, files, requires=(), tag="py3-none-any"):
    return _mw.make_wheel(d, name, version, requires, files, tag)


for v in ("1.0", "2.0"):
    wheel(out, "pkga", v, {"pkga/__init__.py": b"VERSION = '%s'\n" % v.encode()})
wheel(out, "pkgb", "1.0", {"pkgb/__init__.py": b"import pkga\n\ndef uses():\n    return 'pkgb uses pkga ' + pkga.VERSION\n"},
      requires=["pkga"])
wheel(out, "numpy", "99.0", {"numpy/__init__.py": b"__version__ = '99.0'\nFAKE = True\n"})
wheel(os.path.join(out, "evil"), "pkga", "1.0",
      {"pkga/__init__.py": b"print(%r, flush=True)\nVERSION = '1.0'\n" % marker})
wheel(out, "kiwi", "1.0", {
    "kiwi/__init__.py": b"VALUE = 'kiwi 1.0'\n", "kiwi/__main__.py": b"import kiwi\nprint('kiwi main', kiwi.VALUE)\n",
    "kiwi/cli.py": b"def main():\n    print('kiwi cli')\n    return 0\n",
    "kiwi-1.0.dist-info/entry_points.txt": b"[console_scripts]\nkiwi = kiwi.cli:main\n",
    "kiwi-1.0.data/scripts/kiwi-tool": b"#!python\nimport kiwi\nprint('kiwi tool', kiwi.VALUE)\n"}, requires=["pkga"])
wheel(out, "numfork", "1.0", {"numpy/__init__.py": b"__version__ = '98.0-fork'\nFAKE = True\n"})
wheel(out, "numpth", "1.0", {"numpth.pth": b"numpth_dir\n",
                             "numpth_dir/numpy/__init__.py": b"__version__ = '97.0-pth'\nFAKE = True\n"})


def numext():
    import shutil, subprocess, sysconfig, tempfile
    from pip._vendor.packaging import tags
    inc = sysconfig.get_paths()["include"]
    if not shutil.which("gcc") or not os.path.exists(os.path.join(inc, "Python.h")):
        return
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "numpy.c"), "w") as f:
            f.write('#include <Python.h>\n'
                    'static struct PyModuleDef def = { PyModuleDef_HEAD_INIT, "numpy", NULL, -1, NULL };\n'
                    'PyMODINIT_FUNC PyInit_numpy(void) {\n'
                    '    PyObject *m = PyModule_Create(&def);\n'
                    '    if (m && (PyModule_AddStringConstant(m, "__version__", "96.0-ext") < 0 ||\n'
                    '              PyModule_AddIntConstant(m, "FAKE", 1) < 0)) {\n'
                    '        Py_DECREF(m);\n        return NULL;\n    }\n    return m;\n}\n')
        so = os.path.join(d, "numpy.so")
        if subprocess.run(["gcc", "-shared", "-fPIC", "-I", inc, "-o", so, os.path.join(d, "numpy.c")]).returncode:
            return
        wheel(out, "numext", "1.0", {"numpy" + sysconfig.get_config_var("EXT_SUFFIX"): open(so, "rb").read()},
              tag=str(next(iter(tags.sys_tags()))))


numext()
