#!/usr/bin/env bash
# packaging/install.sh - the quick start: install the build dependencies,
# build, install into /usr, create the mcp-exec user and start the broker.
# Run as root on Debian 12 (or any distro with systemd >= 252 and apt).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(id -u) -eq 0 ]] || { echo "install.sh: run as root (sudo $0)" >&2; exit 1; }

packaging/deps.sh
meson setup build-release -Dprefix=/usr --buildtype=release --wipe >/dev/null 2>&1 ||
    meson setup build-release -Dprefix=/usr --buildtype=release >/dev/null
ninja -C build-release >/dev/null
meson install -C build-release --quiet >/dev/null
echo "Installed to /usr/libexec/mcp-exec and $(pkg-config --variable=systemdsystemunitdir systemd)."

if [[ $(ps -o comm= -p 1) != systemd || ! -d /run/systemd/system ]]; then
    cat <<MSG
PID 1 on this machine is not systemd ($(ps -o comm= -p 1)), so the service cannot
run here: every run is a transient systemd unit. Try it in the project's
systemd box instead (boots a real systemd in namespaces, installs this build):

    sudo tests/box/try
MSG
    exit 0
fi

systemd-sysusers
systemctl daemon-reload
systemctl enable --now mcp-exec-runner.socket mcp-exec-stdio.socket
echo 'print("hello from the sandbox")' | mcp-exec run || {
    echo "mcp-exec could not run code; see: journalctl -u mcp-exec.service -u mcp-exec-runner.service" >&2
    exit 1
}
cat <<MSG
mcp-exec is running (sockets: mcp-exec-runner.socket, mcp-exec-stdio.socket).
Connect a local MCP client with:  {"command": "mcp-exec", "args": ["stdio"]}
Run a file by hand with:          mcp-exec run script.py
Users without an active local session need the group mcp-exec-users.
MSG
