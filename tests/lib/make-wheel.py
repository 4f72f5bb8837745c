#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""make-wheel.py DIR NAME VERSION [REQUIRES...]: writes a pure-Python wheel
DIR/NAME-VERSION-py3-none-any.whl with one module, NAME (its VALUE is
"NAME VERSION"), that pip installs; REQUIRES become Requires-Dist lines.
No setuptools, no network: zipfile and hashlib only. Prints the path.

Also importable, the one wheel maker of the tests (test-wheels,
test-launch-packages, make-wheels.py of test-packages):
make_wheel(dir, name, version, requires=(), files=None, tag="py3-none-any",
metadata=""), files being {path in the wheel: str or bytes} to have instead
of the one module (entry_points.txt in the dist-info, .data/scripts, ...),
tag the wheel's tags, metadata more METADATA lines (Requires-Python: ...).
The same arguments give the same bytes (fixed dates): a hash check must
never pass by luck."""

import base64
import hashlib
import os
import sys
import zipfile


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(outdir, name, version, requires=(), files=None, tag="py3-none-any", metadata=""):
    mod = name.replace("-", "_")
    dist = f"{mod}-{version}.dist-info"
    content = dict(files) if files is not None else {f"{mod}.py": f'VALUE = "{name} {version}"\n'}
    content[f"{dist}/METADATA"] = ("Metadata-Version: 2.1\n" f"Name: {name}\nVersion: {version}\n" + metadata
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires))
    content[f"{dist}/WHEEL"] = f"Wheel-Version: 1.0\nGenerator: make-wheel\nRoot-Is-Purelib: true\nTag: {tag}\n"
    content = {p: d.encode() if isinstance(d, str) else d for p, d in content.items()}
    record = "".join(f"{p},{_record_hash(d)},{len(d)}\n" for p, d in content.items())
    content[f"{dist}/RECORD"] = (record + f"{dist}/RECORD,,\n").encode()
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, f"{mod}-{version}-{tag}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in content.items():
            info = zipfile.ZipInfo(p, (2020, 1, 1, 0, 0, 0))
            if ".data/scripts/" in p:
                info.external_attr = 0o100755 << 16     # as a build backend marks a script
            z.writestr(info, d)
    return path


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    print(make_wheel(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
