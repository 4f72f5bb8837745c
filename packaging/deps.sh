#!/usr/bin/env bash
# packaging/deps.sh [--box|--test] - install what building and running mcp-exec
# needs (with --box also what the systemd box, tests/box/box, needs; with --test
# everything testing needs), from Debian's archive. Idempotent and quiet when
# everything is there already.
set -euo pipefail
# Build, then run: dbus and polkitd (every stdio session asks polkit, root's too).
pkgs=(meson ninja-build gcc pkg-config libsystemd-dev libmicrohttpd-dev libjson-c-dev
    python3 systemd dbus polkitd)
# The README's commands: `sudo ...` (so they work from a root shell as typed by a
# sudo user), the token from `openssl rand`, the HTTP call with curl.
pkgs+=(sudo openssl curl)
# The data stack the package Recommends (apt installs recommends by default, so
# a source install matches a package install): the warm pool preloads it and
# figures come back from matplotlib.
pkgs+=(python3-numpy python3-pandas python3-matplotlib python3-pil python3-yaml python3-jinja2)
# Packages on demand: `mcp-exec wheels` downloads with pip, runs install with it
# (and test-egress runs `pip download` in the sandbox).
pkgs+=(python3-pip)
case ${1-} in
--box | --test)
    # tests/box/box: unshare, nsenter, setpriv (util-linux), ip (iproute2).
    pkgs+=(util-linux iproute2)
    ;;&
--test)
    # ps in the tests; clang for the fuzzers; rpm (rpmbuild) for test-packaging-rpm; the load
    # balancer and promtool (prometheus) for test-scaleout-haproxy.
    pkgs+=(procps clang rpm haproxy prometheus)
    # The real MCP clients run on Node.js (>= 20; Debian 12's own nodejs is 18,
    # with which those tests say they skip). npm comes with nodesource's build.
    command -v node >/dev/null || pkgs+=(nodejs npm)
    ;;
'' | --box) ;;
*)
    echo "deps.sh: unknown argument '$1' (--box or --test)" >&2
    exit 2
    ;;
esac
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "Installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
