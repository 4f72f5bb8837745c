#!/usr/bin/env bash
# packaging/deps.sh [--test] - install what building (and, with --test,
# testing) mcp-exec needs, from Debian's archive. Idempotent and quiet when
# everything is there already.
set -euo pipefail
pkgs=(meson ninja-build gcc pkg-config libsystemd-dev libmicrohttpd-dev libjson-c-dev python3 systemd dbus)
if [[ ${1-} == --test ]]; then
    # sudo: the quick-start test runs the README's `sudo ...` command verbatim in a box.
    # rpm (rpmbuild): test-packaging-rpm builds the .rpm and reads its file list.
    pkgs+=(iproute2 util-linux procps clang curl polkitd sudo rpm)
    # The real MCP clients run on Node.js (>= 20; Debian 12's own nodejs is 18,
    # with which those tests say they skip). npm comes with nodesource's build.
    command -v node >/dev/null || pkgs+=(nodejs npm)
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
