#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""meson's install script: byte-compiles code mode's package (mcp_servers)
where it was installed, so that a run's import loads byte code instead of
compiling the source each time (about 6 ms; runs use python3 -B, which reads
byte code but never writes it, and /usr is read-only to them anyway).

    bytecompile.py DIR     DIR as installed (absolute, without DESTDIR)

The .pyc files name the source by its installed path (without DESTDIR). A
build whose python3 is not the one runs use leaves byte code they ignore,
and the source is compiled as before. Debian packages ship no byte code
(policy): their rules turn this off (-Dbytecompile=false) and the
postinst's py3compile does it on the host."""

import compileall
import os
import sys

if len(sys.argv) != 2 or not os.path.isabs(sys.argv[1]):
    sys.exit("usage: bytecompile.py DIR (absolute, as installed)")
if os.environ.get("MESON_INSTALL_DRY_RUN"):
    sys.exit(0)
prefix = os.environ.get("MESON_INSTALL_PREFIX", "")
dest_prefix = os.environ.get("MESON_INSTALL_DESTDIR_PREFIX", prefix)
# DESTDIR, as meson prepended it to the prefix ("" without one).
root = dest_prefix[:len(dest_prefix) - len(prefix)] if prefix and dest_prefix.endswith(prefix) else ""
target = root.rstrip("/") + sys.argv[1] if root else sys.argv[1]
ok = compileall.compile_dir(target, quiet=1, stripdir=root.rstrip("/") or None, prependdir="/" if root else None)
sys.exit(0 if ok else 1)
