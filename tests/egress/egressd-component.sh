#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Component test of mcp-exec-egressd: see egressd-component.py. Needs root
# (unshare of network and mount namespaces), curl, openssl and python3;
# skips (77) without them. Touches no real network: everything is on the
# namespace's own lo.
# usage: egressd-component.sh EGRESSD_BINARY
set -eu
egressd=$(realpath "$1")
here=$(dirname "$(realpath "$0")")

if [ "${EGRESS_IN_NS:-}" != 1 ]; then
        for t in unshare ip curl openssl python3; do
                command -v "$t" >/dev/null || { echo "skip: no $t"; exit 77; }
        done
        unshare -n -m true 2>/dev/null || { echo "skip: cannot unshare network and mount namespaces"; exit 77; }
        exec env EGRESS_IN_NS=1 unshare -n -m "$0" "$@"
fi

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mount --make-rprivate /
ip link set lo up
ip addr add 192.0.2.10/32 dev lo
ip addr add 192.0.2.53/32 dev lo

printf '192.0.2.10 allowed.test\n127.0.0.1 loop.test\n' > "$work/hosts"
mount --bind "$work/hosts" /etc/hosts
# The only resolver: the test's counting DNS stub (egressd-component.py).
printf 'nameserver 192.0.2.53\noptions attempts:1 timeout:8\n' > "$work/resolv.conf"
mount --bind "$work/resolv.conf" /etc/resolv.conf

mkdir "$work/www"
head -c 100 /dev/zero | tr '\0' x > "$work/www/small"
head -c 150000 /dev/zero | tr '\0' y > "$work/www/big"
python3 "$here/egressd-component-www.py" 192.0.2.10 "$work/www" >"$work/http.log" 2>&1 &
for _ in $(seq 50); do
        curl -s -o /dev/null --noproxy '*' http://192.0.2.10/small && break
        sleep 0.1
done

# A TLS server for CONNECT (a throwaway self-signed certificate: only the
# proxy's SNI check is under test, not the client's trust).
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=allowed.test -days 1 \
        -keyout "$work/key.pem" -out "$work/cert.pem" >/dev/null 2>&1
openssl s_server -quiet -accept 192.0.2.10:443 -cert "$work/cert.pem" -key "$work/key.pem" -www \
        >"$work/tls.log" 2>&1 </dev/null &

python3 "$here/egressd-component.py" "$egressd" "$work"
