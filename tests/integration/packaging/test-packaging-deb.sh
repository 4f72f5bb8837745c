#!/usr/bin/env bash
# The Debian package, installed and purged in the box: `apt-get install ./mcp-exec_*.deb` creates
# the user and groups, installs the units and the polkit action, enables and starts
# mcp-exec-broker.socket and mcp-exec-stdio.socket and leaves mcp-exec.socket disabled; after
# `systemctl enable --now mcp-exec.socket`, which succeeds while a local session runs code,
# code runs over HTTP (the README's stateless call) and
# through `mcp-exec run`; the wheelhouse exists, the wheels timer is disabled, `mcp-exec wheels list`
# runs; `apt-get purge` leaves no unit, enablement link, helper, polkit file or
# socket behind (the mcp-exec user and groups stay, as Debian policy asks of system users).
#
# The .deb: $MCP_EXEC_DEB if set, else build-deb/mcp-exec_*.deb at the top of the tree (from
# packaging/build-deb) if no tracked file is newer, else this test runs packaging/build-deb
# (apt-get for the build deps).
# The box must not hold a meson install (tests/box/install-build): then this test skips, so
# tests/run should give it a box of its own.
. "$(dirname "$0")/../../lib/itest.sh"

TOP=$(cd "$ITEST_DIR/.." && pwd)
URL=http://127.0.0.1:8080

if bx test -e /usr/libexec/mcp-exec && ! bx dpkg -S /usr/libexec/mcp-exec >/dev/null 2>&1; then
    skip "the box has a meson install of mcp-exec (/usr/libexec/mcp-exec, no package owns it); run this test in a box of its own"
fi
bx dpkg-query -W -f='${Status}' mcp-exec 2>/dev/null | grep -q 'install ok installed' &&
    skip "mcp-exec is already installed as a package in the box"
bx sh -c 'command -v apt-get && command -v curl' >/dev/null || skip "no apt-get or curl in the box"

deb=${MCP_EXEC_DEB:-}
if [[ -z $deb ]]; then
    # A .deb left from an older tree would test old code: reuse it only if no tracked file
    # changed since it was built.
    deb=$(ls -t "$TOP"/build-deb/mcp-exec_*_*.deb 2>/dev/null | head -1)
    if [[ -n $deb ]] && git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
        while IFS= read -r -d '' f; do
            if [[ $TOP/$f -nt $deb ]]; then
                log "build-deb/ is older than $f: building the package again"
                deb=
                break
            fi
        done < <(git -C "$TOP" ls-files -z)
    fi
fi
if [[ -z $deb ]]; then
    # nocheck: the package build's unit tests are the tree's `meson test`, which the pass runs on
    # this release already (tests/run); twice was a minute of CPU for nothing new.
    log "building the package (DEB_BUILD_OPTIONS=nocheck packaging/build-deb)"
    DEB_BUILD_OPTIONS=nocheck "$TOP/packaging/build-deb" "$TOP/build-deb" >"$HDIR/build-deb.log" 2>&1 ||
        fail "packaging/build-deb failed: $(tail -20 "$HDIR/build-deb.log")"
    deb=$(ls -t "$TOP"/build-deb/mcp-exec_*_*.deb | head -1)
fi
[[ -f $deb ]] || fail "no .deb: $deb"
log "package: $deb"
cp "$deb" "$HDIR/" && chmod 0644 "$HDIR/$(basename "$deb")"
bdeb=$BDIR/$(basename "$deb")

# The host is a Docker image whose /usr/sbin/policy-rc.d (exit 101) forbids maintainer scripts to
# start services; a real machine has none. Move it aside in the box (an overlay: the host keeps it).
if bx test -e /usr/sbin/policy-rc.d; then
    bx mv /usr/sbin/policy-rc.d /usr/sbin/policy-rc.d.itest || fail "cannot move policy-rc.d aside"
    at_exit 'bx mv /usr/sbin/policy-rc.d.itest /usr/sbin/policy-rc.d'   # after the purge below
fi

purge() { bx env DEBIAN_FRONTEND=noninteractive apt-get purge -y mcp-exec >/dev/null 2>&1; }
at_exit 'bx dpkg-query -W -f="\${Status}" mcp-exec 2>/dev/null | grep -q "ok installed" && purge'

# The box's /etc/credstore is its own and empty (tests/box/box): away with it, so that the check
# below proves the install makes it.
bx rmdir /etc/credstore 2>/dev/null || :
credstore_before=$(bx stat -c '%U:%G %a' /etc/credstore 2>/dev/null) &&
    log "/etc/credstore exists before the install ($credstore_before, not empty): its check below proves less"

# --- install (no network in the box: every dependency is installed already, from the host).
bx env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$bdeb" \
    >"$HDIR/install.log" 2>&1 || fail "apt-get install failed: $(tail -20 "$HDIR/install.log")"
log "installed $(bx dpkg-query -W -f='${Package} ${Version}' mcp-exec)"

bx getent passwd mcp-exec >/dev/null || fail "no user mcp-exec after install"
bx getent group mcp-exec-users >/dev/null || fail "no group mcp-exec-users after install"
for u in mcp-exec-broker.socket mcp-exec-tmpfs.socket mcp-exec-stdio.socket; do
    [[ $(bx systemctl is-enabled "$u") == enabled ]] || fail "$u is not enabled after install"
    bx systemctl is-active -q "$u" || fail "$u is not active after install"
done
[[ $(bx systemctl is-enabled mcp-exec.socket) == disabled ]] ||
    fail "mcp-exec.socket is $(bx systemctl is-enabled mcp-exec.socket) after install, not disabled"
bx systemctl is-active -q mcp-exec.socket && fail "mcp-exec.socket listens right after install"
bx test -f /usr/share/polkit-1/actions/org.mcp-exec.policy || fail "no polkit action after install"
# The reference configuration for several hosts, uncompressed (it is copied and used as it is).
for f in haproxy.cfg listen-remote.conf node.conf; do
    bx test -f "/usr/share/doc/mcp-exec/examples/$f" || fail "no /usr/share/doc/mcp-exec/examples/$f after install"
done
bx stat -c '%U:%G %a' /run/mcp-exec/broker.sock | grep -qx 'root:mcp-exec 660' ||
    fail "broker.sock: $(bx stat -c '%U:%G %a' /run/mcp-exec/broker.sock)"
bx stat -c '%U:%G %a' /run/mcp-exec/tmpfs.sock | grep -qx 'root:root 600' ||
    fail "tmpfs.sock: $(bx stat -c '%U:%G %a' /run/mcp-exec/tmpfs.sock)"
# tmpfiles.d made the runs' tmpfs parent at install, root only.
bx stat -c '%U:%G %a' /run/mcp-exec-tmp | grep -qx 'root:root 700' ||
    fail "/run/mcp-exec-tmp after install: $(bx stat -c '%U:%G %a' /run/mcp-exec-tmp 2>&1)"
# ... and /etc/credstore, where the README puts the HTTP token (systemd 252 makes none).
bx stat -c '%U:%G %a' /etc/credstore | grep -qx 'root:root 700' ||
    fail "/etc/credstore after install: $(bx stat -c '%U:%G %a' /etc/credstore 2>&1)"

# Packages on demand: the wheelhouse (tmpfiles.d) and the list (a conffile, comments only) are
# there, the weekly sync's timer is shipped but not enabled, and `mcp-exec wheels` runs its
# script (an empty wheelhouse: "no wheels", exit 0).
bx stat -c '%U:%G %a' /var/lib/mcp-exec/wheels | grep -qx 'root:root 755' ||
    fail "/var/lib/mcp-exec/wheels after install: $(bx stat -c '%U:%G %a' /var/lib/mcp-exec/wheels 2>&1)"
bx grep -qx '/etc/mcp-exec/packages.txt' /var/lib/dpkg/info/mcp-exec.conffiles ||
    fail "/etc/mcp-exec/packages.txt is not a conffile: $(bx cat /var/lib/dpkg/info/mcp-exec.conffiles 2>&1)"
bx grep -qv '^#' /etc/mcp-exec/packages.txt && fail "packages.txt lists something: $(bx cat /etc/mcp-exec/packages.txt)"
[[ $(bx systemctl is-enabled mcp-exec-wheels.timer) == disabled ]] ||
    fail "mcp-exec-wheels.timer is $(bx systemctl is-enabled mcp-exec-wheels.timer) after install, not disabled"
out=$(bx mcp-exec wheels list 2>&1) || fail "mcp-exec wheels list failed: $out"
grep -q 'no wheels' <<<"$out" || fail "mcp-exec wheels list of an empty wheelhouse: $out"
log "wheelhouse 755 root, packages.txt a conffile, timer disabled, wheels list: $out"
# The sync's own service, hardening and all, fills it: pip pointed at a directory of wheels built
# here by a drop-in (pip's own configuration, as an operator points it at a mirror).
if bx /usr/bin/python3 -m pip --version >/dev/null 2>&1; then
    mkdir -p "$HDIR/idx"
    python3 "$TOP/tests/lib/make-wheel.py" "$HDIR/idx" itbase 1.0 >/dev/null &&
        python3 "$TOP/tests/lib/make-wheel.py" "$HDIR/idx" ittop 2.0 'itbase>=1' >/dev/null ||
        fail "cannot build the test wheels"
    chmod -R a+rX "$HDIR/idx"
    bx sh -c 'echo ittop >>/etc/mcp-exec/packages.txt'
    bx mkdir -p /etc/systemd/system/mcp-exec-wheels.service.d
    bx sh -c "printf '[Service]\nEnvironment=PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 PIP_FIND_LINKS=$BDIR/idx\n' \
        >/etc/systemd/system/mcp-exec-wheels.service.d/50-itest.conf"
    at_exit 'bx rm -rf /etc/systemd/system/mcp-exec-wheels.service.d'
    bx systemctl daemon-reload
    bx systemctl start mcp-exec-wheels.service ||
        fail "mcp-exec-wheels.service failed: $(bx journalctl -u mcp-exec-wheels.service --no-pager | tail -20)"
    sums=$(bx cat /var/lib/mcp-exec/wheels/SHA256SUMS)
    grep -q '  ittop-2.0-py3-none-any.whl$' <<<"$sums" && grep -q '  itbase-1.0-py3-none-any.whl$' <<<"$sums" ||
        fail "the service's sync did not list ittop and its dependency: $sums"
    bx stat -c '%U:%G %a' /var/lib/mcp-exec/wheels/ittop-2.0-py3-none-any.whl | grep -qx 'root:root 644' ||
        fail "a wheel: $(bx stat -c '%U:%G %a' /var/lib/mcp-exec/wheels/ittop-2.0-py3-none-any.whl)"
    out=$(bx mcp-exec wheels verify 2>&1) || fail "mcp-exec wheels verify after the service's sync: $out"
    bx rm -rf /etc/systemd/system/mcp-exec-wheels.service.d
    bx systemctl daemon-reload
    log "mcp-exec-wheels.service synced: $(tr '\n' ' ' <<<"$sums" | sed 's/[0-9a-f]\{64\}  //g')"
else
    log "no pip in the box (python3-pip): mcp-exec-wheels.service is not tried"
fi

# --- HTTP, after the admin's `systemctl enable --now mcp-exec.socket`, while a local session runs
# code (mcp-exec-stdio.service active): the two sockets have services of their own, so this
# works (with one service for both, systemd refused: "Socket service ... already active").
# The credential systemd mounts for the service shows only if / is a shared mount, as on a host
# (see test-http-activation).
if ! bx findmnt -no PROPAGATION / | grep -q shared; then
    bx mount --make-rshared / || fail "cannot make / a shared mount in the box"
    at_exit 'bx mount --make-rprivate /'
fi
printf 'import time\ntime.sleep(15)\nprint("slept")\n' | bx mcp-exec run >"$HDIR/slow.out" 2>"$HDIR/slow.err" &
slowpid=$!
at_exit "kill $slowpid 2>/dev/null"
wait_for 30 found active_run_units || fail "no run while mcp-exec run sleeps: $(cat "$HDIR/slow.err")"
bx systemctl is-active -q mcp-exec-stdio.service || fail "mcp-exec-stdio.service is not active during a local run"
en=$(bx systemctl enable --now mcp-exec.socket 2>&1) ||
    fail "systemctl enable --now mcp-exec.socket failed while a local session runs: $en"
[[ $(bx systemctl is-enabled mcp-exec.socket) == enabled ]] || fail "mcp-exec.socket not enabled"
st=$(bx curl -s --max-time 60 -o "$BDIR/http.b" -w '%{http_code}' "$URL/mcp" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: exec' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"code":"print(6*7)"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}')
[[ $st == 200 ]] || fail "HTTP $st: $(head -c 500 "$HDIR/http.b")"
grep -qF '"stdout":"42\n"' "$HDIR/http.b" || fail "no answer 42 over HTTP: $(head -c 500 "$HDIR/http.b")"
log "HTTP: 200, stdout 42"
wait "$slowpid" || fail "the local run during the enable failed: $(cat "$HDIR/slow.out" "$HDIR/slow.err")"
[[ $(cat "$HDIR/slow.out") == slept ]] || fail "the local run printed: $(cat "$HDIR/slow.out")"
log "the local session that ran during the enable finished: slept"

# --- mcp-exec run (the local socket, polkit: root).
out=$(printf 'print(6*7)\n' | bx mcp-exec run 2>"$HDIR/run.err") || fail "mcp-exec run failed: $out $(cat "$HDIR/run.err")"
[[ $out == 42 ]] || fail "mcp-exec run printed '$out', not 42: $(cat "$HDIR/run.err")"
log "mcp-exec run: $out"

# --- purge.
bx env DEBIAN_FRONTEND=noninteractive apt-get purge -y mcp-exec >"$HDIR/purge.log" 2>&1 ||
    fail "apt-get purge failed: $(tail -20 "$HDIR/purge.log")"
bx dpkg-query -W -f='${Status}' mcp-exec 2>/dev/null | grep -q 'ok installed' && fail "still installed after purge"
left=$(bx sh -c 'ls -d /lib/systemd/system/mcp-exec* /usr/lib/systemd/system/mcp-exec* \
        /etc/systemd/system/mcp-exec* /etc/systemd/system/*/mcp-exec* \
        /usr/libexec/mcp-exec /usr/bin/mcp-exec /usr/lib/sysusers.d/mcp-exec.conf \
        /usr/lib/tmpfiles.d/mcp-exec.conf /run/mcp-exec-tmp /etc/mcp-exec/packages.txt /var/lib/mcp-exec \
        /usr/share/polkit-1/actions/org.mcp-exec.policy /usr/share/polkit-1/rules.d/*mcp-exec* \
        /usr/share/man/man*/mcp-exec* /usr/share/doc/mcp-exec /run/mcp-exec/*.sock \
        /var/lib/systemd/deb-systemd-helper-enabled/*mcp-exec* \
        /var/lib/systemd/deb-systemd-helper-enabled/*/mcp-exec* 2>/dev/null')
[[ -z $left ]] || fail "left after purge:"$'\n'"$left"
bx systemctl daemon-reload
units=$(bx systemctl list-units --all 'mcp-exec*' --plain --no-legend --no-pager | awk '$3 != "not-found" || $4 != "inactive"')
[[ -z $units ]] || fail "mcp-exec units still loaded after purge:"$'\n'"$units"
assert_clean 10
log "purged: no unit, link, helper, polkit or man file left; user kept: $(bx getent passwd mcp-exec || echo none)"
pass
