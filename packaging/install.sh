#!/usr/bin/env bash
# packaging/install.sh - the quick start: install the build dependencies,
# build, install into /usr, create the mcp-exec user, enable and start the broker
# and stdio sockets, run one piece of code and print how to connect a client.
# On a host whose PID 1 is not systemd it says so and exits 1, installing nothing.
# Debian 12 (or any distro with systemd >= 252 and apt). Typed as is by root or by
# a user who may use sudo: it re-runs itself through sudo when not root.
set -euo pipefail
self=$(readlink -f "$0")
if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null; then
        echo "install.sh: needs root; sudo is not installed, so run it from a root shell (su -)" >&2
        exit 1
    fi
    exec sudo -- "$self" "$@"
fi
cd "$(dirname "$self")/.."

# Without systemd as PID 1 the service cannot run (every run is a transient systemd unit):
# say so before touching anything.
pid1=$(ps -o comm= -p 1 2>/dev/null || echo unknown)
if [[ $pid1 != systemd || ! -d /run/systemd/system ]]; then
    cat >&2 <<MSG
install.sh: PID 1 on this machine is not systemd (it is $pid1), so mcp-exec cannot
run here: every run is a transient systemd unit. Nothing was installed. Try it in
the project's systemd box instead (boots a real systemd in namespaces, installs a
build there and runs code):

    sudo tests/box/try
MSG
    exit 1
fi

packaging/deps.sh
meson setup build-release -Dprefix=/usr --buildtype=release --wipe >/dev/null 2>&1 ||
    meson setup build-release -Dprefix=/usr --buildtype=release >/dev/null
ninja -C build-release >/dev/null
meson install -C build-release --quiet >/dev/null
echo "Installed to /usr/libexec/mcp-exec and $(pkg-config --variable=systemdsystemunitdir systemd)."
systemd-sysusers
systemctl daemon-reload
systemctl enable --now mcp-exec-broker.socket mcp-exec-stdio.socket
echo 'print("hello from the sandbox")' | mcp-exec run || {
    echo "mcp-exec could not run code; see: journalctl -u mcp-exec-stdio.service -u mcp-exec-broker.service" >&2
    exit 1
}
cat <<MSG
mcp-exec is running (sockets: mcp-exec-broker.socket, mcp-exec-stdio.socket).
Connect a local MCP client with:  {"command": "mcp-exec", "args": ["stdio"]}
Run a file by hand with:          mcp-exec run script.py
Users without an active local session need the group mcp-exec-users.
HTTP (127.0.0.1:8080) is off; README.md, "Connect a client", says how to turn it on.
MSG
