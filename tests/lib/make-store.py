#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""make-store.py WHEELHOUSE STORE: a package store for the tests, made from
WHEELHOUSE/SHA256SUMS as docs/packages.md ("The package store") lays it out:
STORE/wheels/FILE (checked copies), STORE/trees/SHA256/ (each wheel
unpacked: purelib and platlib at the top, .data/scripts as .scripts/) and
STORE/index.json, the commit point, written last by rename.

A stand-in, kept small: `mcp-exec wheels prepare` (add, sync) makes the real
one, as root, for the runs; this one lets the installer's tests
(test-launch-packages, test-packages) have a store before and besides it.
Also importable: make_store(wheelhouse, store)."""

import configparser
import hashlib
import itertools
import json
import os
import re
import shutil
import stat
import sys
import zipfile


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _tags(fn):
    parts = fn[:-4].split("-")
    return ["-".join(t) for t in itertools.product(*(p.split(".") for p in parts[-3:]))]


def _unpack(z, tree):
    """The wheel's files into tree: X.data/purelib and platlib at the top,
    X.data/scripts/F as .scripts/F, X.data/KIND/F (data, headers) as
    .data/KIND/F, the rest as it is. Returns the scripts."""
    scripts = []
    for info in z.infolist():
        parts = info.filename.split("/")
        if info.is_dir() or info.filename.startswith("/") or ".." in parts or "" in parts:
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            raise SystemExit("%s: a symbolic link in the wheel" % info.filename)
        if parts[0].endswith(".data") and len(parts) > 2:
            if parts[1] in ("purelib", "platlib"):
                parts = parts[2:]
            elif parts[1] == "scripts":
                parts = [".scripts"] + parts[2:]
                scripts.append("/".join(parts))
            else:
                parts = [".data"] + parts[1:]
        path = os.path.join(tree, *parts)
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        with z.open(info) as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.chmod(path, 0o644)
    return scripts


def _top_level(tree):
    mods, pth = set(), []
    for n in os.listdir(tree):
        p = os.path.join(tree, n)
        if n.endswith((".dist-info", ".data")) or n in (".scripts", ".data"):
            continue
        if os.path.isdir(p):
            if any(f.endswith((".py", ".so")) for _, _, fs in os.walk(p) for f in fs):
                mods.add(n)
        elif n.endswith((".py", ".so")):
            mods.add(n.split(".")[0])
        elif n.endswith(".pth"):
            pth.append(n)
    return sorted(mods), sorted(pth)


def _entry(store, fn, sha, z):
    tree = os.path.join(store, "trees", sha)
    if not os.path.isdir(tree):
        os.makedirs(tree + ".tmp", mode=0o755)
        scripts = _unpack(z, tree + ".tmp")
        os.rename(tree + ".tmp", tree)
    else:
        scripts = [".scripts/" + n for n in os.listdir(os.path.join(tree, ".scripts"))] \
            if os.path.isdir(os.path.join(tree, ".scripts")) else []
    info = next(n for n in os.listdir(tree) if n.endswith(".dist-info"))
    md = open(os.path.join(tree, info, "METADATA"), encoding="utf-8").read().split("\n\n", 1)[0]
    head = [tuple(l.split(": ", 1)) for l in md.splitlines() if ": " in l]
    one = {k: v for k, v in head}
    ep = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    ep.optionxform = str
    ep.read(os.path.join(tree, info, "entry_points.txt"), encoding="utf-8")
    top, pth = _top_level(tree)
    return {"name": normalize(one["Name"]), "version": one["Version"], "file": fn, "sha256": sha, "tags": _tags(fn),
            "requires_python": one.get("Requires-Python"),
            "requires_dist": [v for k, v in head if k == "Requires-Dist"],
            "provides_extra": [v for k, v in head if k == "Provides-Extra"],
            "top_level": top, "pth": pth,
            "console_scripts": dict(ep["console_scripts"]) if ep.has_section("console_scripts") else {},
            "gui_scripts": dict(ep["gui_scripts"]) if ep.has_section("gui_scripts") else {},
            "scripts": sorted(scripts), "unpacked_bytes": sum(i.file_size for i in z.infolist())}


def make_store(wheelhouse, store, python="%d.%d" % sys.version_info[:2]):
    for d in (store, os.path.join(store, "wheels"), os.path.join(store, "trees")):
        os.makedirs(d, mode=0o755, exist_ok=True)
    wheels = []
    for line in open(os.path.join(wheelhouse, "SHA256SUMS"), encoding="utf-8"):
        sha, fn = line.split()
        data = open(os.path.join(wheelhouse, fn), "rb").read()
        if hashlib.sha256(data).hexdigest() != sha:
            raise SystemExit("%s: its hash is not the manifest's" % fn)
        copy = os.path.join(store, "wheels", fn)
        with open(copy + ".tmp", "wb") as f:
            f.write(data)
        os.chmod(copy + ".tmp", 0o644)
        os.rename(copy + ".tmp", copy)
        with zipfile.ZipFile(copy) as z:
            wheels.append(_entry(store, fn, sha, z))
    tmp = os.path.join(store, ".index.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"version": 1, "python": python, "wheels": wheels}, f, indent=1)
    os.chmod(tmp, 0o644)
    os.rename(tmp, os.path.join(store, "index.json"))
    return wheels


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    make_store(sys.argv[1], sys.argv[2])
