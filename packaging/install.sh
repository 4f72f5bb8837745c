#!/usr/bin/env bash
# packaging/install.sh [--box NAME] [--port PORT] - the quick start: install what
# building and running needs (packaging/deps.sh), build, install and start mcp-exec,
# run one piece of code and print how to connect a client. Debian 12 (or any distro
# with systemd >= 252 and apt). Typed as is by root or by a user who may use sudo:
# it re-runs itself through sudo when not root.
#
# With systemd as PID 1 it installs into /usr, creates the mcp-exec user and enables
# and starts mcp-exec-broker.socket, mcp-exec-tmpfs.socket (the broker's mount
# daemon), mcp-exec-egress.socket (its egress proxy), mcp-exec-tools.socket (the code-mode
# gateway, idle until /etc/mcp-exec/servers.d has servers) and mcp-exec-stdio.socket; HTTP
# stays off until the admin turns it on
# (README.md, "Connect a client").
#
# Without (a container, a CI sandbox) it says so and falls back to the project's
# systemd box (tests/box/box: a real systemd as PID 1 in namespaces): it installs the
# build there, starts the broker and stdio sockets and mcp-exec.socket, which listens
# on this machine's 127.0.0.1:PORT with the token /etc/credstore/mcp-exec.auth-token
# (made here if missing), and prints how to connect and how to remove the box.
# Options (used by the fallback only):
#   --box NAME    the box's name (default mcp-exec); a box of that name is replaced
#   --port PORT   this machine's loopback port for HTTP (default 8080)
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
top=$PWD

box=mcp-exec
port=8080
while (($#)); do
    case $1 in
    --box | --port)
        (($# >= 2)) || { echo "install.sh: $1 needs a value" >&2; exit 2; }
        if [[ $1 == --box ]]; then box=$2; else port=$2; fi
        shift
        ;;
    -h | --help)
        sed -n '2,19s/^# \{0,1\}//p' "$self"
        exit 0
        ;;
    *)
        echo "install.sh: unknown argument '$1' (see --help)" >&2
        exit 2
        ;;
    esac
    shift
done
[[ $box =~ ^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$ ]] || { echo "install.sh: bad box name '$box'" >&2; exit 2; }
[[ $port =~ ^[1-9][0-9]{0,4}$ ]] && ((port <= 65535)) || { echo "install.sh: bad port '$port'" >&2; exit 2; }

build() {
    local -a opts=(-Dprefix=/usr --buildtype=release)
    if [[ -f build-release/meson-private/coredata.dat ]]; then
        meson setup --reconfigure build-release "${opts[@]}" >/dev/null ||
            meson setup --wipe build-release "${opts[@]}" >/dev/null
    else
        meson setup build-release "${opts[@]}" >/dev/null
    fi
    ninja -C build-release >/dev/null
}

# The stateless (2026-07-28) exec call of README.md, "Connect a client", on PORT with the
# token in FILE; the token goes to curl through a pipe, not its argv. Prints the answer.
http_call() {
    printf 'X-MCP-AUTH: %s\n' "$(cat "$2")" |
        curl -s --max-time 60 "http://127.0.0.1:$1/mcp" -H @- \
            -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
            -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: exec' \
            -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"code":"print(6*7)"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
}

# Every run is a transient systemd unit: it takes systemd as PID 1 to run the service.
pid1=$(cat /proc/1/comm 2>/dev/null || echo unknown)
if [[ $pid1 == systemd && -d /run/systemd/system ]]; then
    packaging/deps.sh
    build
    meson install -C build-release --quiet >/dev/null
    echo "Installed to /usr/libexec/mcp-exec and $(pkg-config --variable=systemdsystemunitdir systemd)."
    systemd-sysusers
    systemd-tmpfiles --create mcp-exec.conf
    # The store runs install from, made anew from an existing wheelhouse
    # (an upgrade from a version without one; docs/packages.md).
    # (A fresh install has no mcp-exec.conf yet: no sed of a missing file under pipefail.)
    wh=
    if [[ -r /etc/mcp-exec/mcp-exec.conf ]]; then
        wh=$(sed -n 's/^[[:space:]]*MCP_EXEC_WHEELHOUSE=//p' /etc/mcp-exec/mcp-exec.conf | tail -n 1 | tr -d "\"'")
    fi
    if [[ -f ${wh:-/var/lib/mcp-exec/wheels}/SHA256SUMS ]]; then
        mcp-exec wheels prepare || echo "mcp-exec wheels prepare failed: packages fail until it succeeds" >&2
    fi
    systemctl daemon-reload
    systemctl enable --now mcp-exec-broker.socket mcp-exec-tmpfs.socket mcp-exec-egress.socket mcp-exec-tools.socket \
        mcp-exec-stdio.socket
    echo 'print("hello from the sandbox")' | mcp-exec run || {
        echo "mcp-exec could not run code; see: journalctl -u mcp-exec-stdio.service -u mcp-exec-broker.service" >&2
        exit 1
    }
    cat <<MSG
mcp-exec is running (sockets: mcp-exec-broker.socket, mcp-exec-tmpfs.socket,
mcp-exec-egress.socket, mcp-exec-tools.socket, mcp-exec-stdio.socket).
Connect a local MCP client with:  {"command": "mcp-exec", "args": ["stdio"]}
Run a file by hand with:          mcp-exec run script.py
Users without an active local session need the group mcp-exec-users.
HTTP (127.0.0.1:8080) is off; README.md, "Connect a client", says how to turn it on.
Packages on demand: mcp-exec wheels add NAME (docs/packages.md).
MSG
    exit 0
fi

# --- no systemd as PID 1: the box ---------------------------------------------------------------
boxcmd=$top/tests/box/box
cat <<MSG
PID 1 on this machine is not systemd (it is $pid1), and mcp-exec needs systemd: every
run is a transient systemd unit. Falling back to the project's systemd box, a real
systemd as PID 1 in namespaces (tests/box/box), named '$box': the build is installed
there, not on this machine, and HTTP is served on this machine's 127.0.0.1:$port.
MSG
packaging/deps.sh --box
build
if "$boxcmd" list | grep -xF "$box" >/dev/null; then
    echo "Replacing the box '$box'."
    "$boxcmd" down "$box"
fi
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "install.sh: something listens on 127.0.0.1:$port already; stop it or choose another port (--port PORT)" >&2
    exit 1
fi

# The token where README.md puts it, made as README.md makes it, unless there is one.
token=/etc/credstore/mcp-exec.auth-token
if [[ ! -s $token ]]; then
    [[ -d /etc/credstore ]] || install -d -m0700 /etc/credstore
    install -m0600 /dev/stdin "$token" <<<"$(openssl rand -hex 32)"
    echo "Made an HTTP token: $token"
fi

# A box of this machine's root, whatever a test pass on another release exported: the build is
# this machine's.
# Once more if it does not come up: on a loaded machine a box's boot has failed once in a while
# (tests/run does the same for its boxes).
if ! MCP_EXEC_BOX_ROOT= MCP_EXEC_BOX_HOST_NETNS=1 "$boxcmd" up "$box"; then
    echo "The box '$box' did not come up; once more."
    "$boxcmd" down "$box" >/dev/null 2>&1 || true
    MCP_EXEC_BOX_ROOT= MCP_EXEC_BOX_HOST_NETNS=1 "$boxcmd" up "$box"
fi
tests/box/install-build "$box" build-release
root=$("$boxcmd" root "$box")
install -m0600 "$token" "$root$token"
# mcp-exec.socket listens in this machine's network namespace (the box's handle on it,
# /run/host-netns); the front end it starts and every run still have their own.
mkdir -p "$root/etc/systemd/system/mcp-exec.socket.d"
cat >"$root/etc/systemd/system/mcp-exec.socket.d/50-host-network.conf" <<CONF
# packaging/install.sh: HTTP on the host's loopback, from this box.
[Socket]
NetworkNamespacePath=/run/host-netns
ListenStream=
ListenStream=127.0.0.1:$port
CONF
"$boxcmd" exec "$box" -- sh -ec 'systemctl daemon-reload; systemctl enable --now mcp-exec.socket'

echo 'print("hello from the sandbox")' | "$boxcmd" exec "$box" -- mcp-exec run || {
    echo "mcp-exec could not run code in the box; see: $boxcmd exec $box -- journalctl -u mcp-exec-stdio.service -u mcp-exec-broker.service" >&2
    exit 1
}
answer=$(http_call "$port" "$token") || true
grep -qF '"stdout":"42\n"' <<<"$answer" || {
    echo "install.sh: no answer over HTTP on 127.0.0.1:$port: ${answer:-(none)}" >&2
    echo "see: $boxcmd exec $box -- journalctl -u mcp-exec.socket -u mcp-exec.service" >&2
    exit 1
}
stdio_json=$(python3 -c 'import json, sys; print(json.dumps({"command": "sudo", "args": sys.argv[1:]}))' \
    "$boxcmd" exec "$box" -- mcp-exec stdio)
cat <<MSG
mcp-exec is running in the box '$box' (sockets: mcp-exec-broker.socket,
mcp-exec-tmpfs.socket, mcp-exec-stdio.socket, mcp-exec.socket); HTTP answered
on 127.0.0.1:$port.
HTTP clients:   http://127.0.0.1:$port/mcp (or /sse) with the header X-MCP-AUTH: <token>,
                <token> being the content of $token
                (README.md's curl call and HTTP client settings work as written$( ((port == 8080)) || echo ", port $port"))
A local MCP client (stdio, through the box; as root, or where sudo asks no password):
                $stdio_json
Run code:       echo 'print(6*7)' | sudo $boxcmd exec $box -- mcp-exec run
Stop and remove it (the box ends with this machine's next restart too):
                sudo $boxcmd down $box
                (the token stays; remove it with: sudo rm $token)
MSG
