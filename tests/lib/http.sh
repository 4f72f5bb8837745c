# shellcheck shell=bash
# tests/lib/http.sh - set-up shared by tests/integration/transport/test-http-*.sh. Source it after
# tests/lib/itest.sh. It makes the box's / a shared mount (the credential systemd mounts for the
# service shows only then, as on a host), installs mcp-exec.socket from the source tree if the
# build did not, stops and removes what it added at exit, and provides restart_http and
# set_http_token.

ensure_shared_root() {
    if ! bx findmnt -no PROPAGATION / | grep -q shared; then
        bx mount --make-rshared / || fail "cannot make / a shared mount in the box"
        at_exit 'bx mount --make-rprivate /'
    fi
}
ensure_shared_root

ITEST_SOCKET_ADDED=
if ! bx systemctl cat mcp-exec.socket >/dev/null 2>&1; then
    bx sh -c 'cat >/run/systemd/system/mcp-exec.socket' <"$ITEST_DIR/../units/mcp-exec.socket" ||
        fail "cannot install mcp-exec.socket in the box"
    ITEST_SOCKET_ADDED=1
    bx systemctl daemon-reload
fi
remove_socket() {
    bx systemctl stop mcp-exec.socket mcp-exec.service >/dev/null 2>&1
    if [[ -n $ITEST_SOCKET_ADDED ]]; then
        bx rm -f /run/systemd/system/mcp-exec.socket
        bx systemctl daemon-reload
    fi
    # Local sessions are not touched: mcp-exec-stdio.socket feeds its own service.
}
at_exit remove_socket

# restart_http: the front end reads its configuration at start; the socket starts it again.
restart_http() {
    bx sh -c 'systemctl stop mcp-exec.service
              systemctl reset-failed mcp-exec.service mcp-exec.socket 2>/dev/null
              systemctl restart mcp-exec.socket' >/dev/null 2>&1
    bx systemctl is-active -q mcp-exec.socket || fail "mcp-exec.socket does not listen"
}

# set_http_token TOKEN: the HTTP token as the README sets it (the credential in /etc/credstore,
# root's only), removed at exit. The front end reads it at its next start.
set_http_token() {
    at_exit 'bx rm -f /etc/credstore/mcp-exec.auth-token'
    bx sh -c "mkdir -p /etc/credstore && umask 077 && printf '%s\n' '$1' >/etc/credstore/mcp-exec.auth-token" ||
        fail "cannot write the HTTP token to /etc/credstore"
}
