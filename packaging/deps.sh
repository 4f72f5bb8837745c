#!/usr/bin/env bash
# packaging/deps.sh [--box|--test] [--list] - install what building and running mcp-exec
# needs (with --box also what the systemd box, tests/box/box, needs; with --test
# everything testing needs), from Debian's archive. Idempotent and quiet when
# everything is there already. Debian 12 and 13 (the package names are the same).
# With --list it installs nothing and prints the packages, one a line (tests/box/make-root
# puts them into a release root).
set -euo pipefail
list=0
args=()
for a in "$@"; do
    if [[ $a == --list ]]; then list=1; else args+=("$a"); fi
done
set -- ${args[@]+"${args[@]}"}
(($# <= 1)) || { echo "deps.sh: one of --box or --test, and --list" >&2; exit 2; }
# Build, then run: dbus and polkitd (every stdio session asks polkit, root's too).
pkgs=(meson ninja-build gcc pkg-config libsystemd-dev libmicrohttpd-dev libjson-c-dev
    python3 systemd dbus polkitd)
# libcurl: the bridge of Streamable HTTP upstream servers (servers.d URL=, mcp-exec-upstream-http).
pkgs+=(libcurl4-openssl-dev)
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
    # six for test-launch-packages (a wheel of it shadows the system's): Debian 12 has it
    # through python3-dateutil, 13 no more.
    pkgs+=(python3-six)
    # Python.h for test-packages' wheel with an extension module (built with gcc for the
    # interpreter of the box it runs in, 3.11 or 3.13).
    pkgs+=(python3-dev)
    # The real MCP clients run on Node.js (>= 20; Debian 12's own nodejs is 18,
    # with which those tests say they skip). npm comes with nodesource's build.
    # Debian 13's is 20. --list names them whatever this machine has.
    if ((list)) || ! command -v node >/dev/null; then pkgs+=(nodejs npm); fi
    ;;
'' | --box) ;;
*)
    echo "deps.sh: unknown argument '$1' (--box or --test)" >&2
    exit 2
    ;;
esac
if ((list)); then
    printf '%s\n' "${pkgs[@]}"
    exit 0
fi
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
