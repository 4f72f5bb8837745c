#!/usr/bin/env bash
# The RPM's file list is what meson installs: build the .rpm (packaging/rpm/build-rpm, rpmbuild from
# Debian's rpm package) and compare `rpm -qlp` (regular files and symlinks) with the files
# `meson install --destdir` puts in a scratch directory, for prefix /usr. Paths are compared after
# merged-/usr normalisation (/lib/... = /usr/lib/...) and with man-page compression suffixes
# dropped; rpm's /usr/lib/.build-id links are not part of the comparison. Needs no box.
# The .rpm: $MCP_EXEC_RPM if set, else one this test builds. Exit codes: 0 pass, 1 fail, 77 skip.
set -uo pipefail
NAME=$(basename "$0" .sh)
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
log() { printf '%s: %s\n' "$NAME" "$*" >&2; }
fail() { printf '%s: FAIL: %s\n' "$NAME" "$*" >&2; exit 1; }
skip() { printf '%s: SKIP: %s\n' "$NAME" "$*" >&2; exit 77; }

command -v rpm >/dev/null && command -v rpmbuild >/dev/null || skip "no rpm/rpmbuild (apt-get install rpm)"
command -v meson >/dev/null || skip "no meson"

tmp=$(mktemp -d /tmp/$NAME.XXXXXX)
trap 'rm -rf -- "$tmp"' EXIT

rpmfile=${MCP_EXEC_RPM:-}
if [[ -z $rpmfile ]]; then
    # --nocheck: the spec's %check is the tree's `meson test`, which the pass runs already.
    "$TOP/packaging/rpm/build-rpm" "$tmp/rpm" --nocheck >"$tmp/build-rpm.log" 2>&1 ||
        fail "packaging/rpm/build-rpm failed: $(tail -30 "$tmp/build-rpm.log")"
    rpmfile=$(ls "$tmp"/rpm/mcp-exec-[0-9]*.rpm | head -1)
fi
[[ -f $rpmfile ]] || fail "no .rpm: $rpmfile"
log "package: $(basename "$rpmfile")"

norm() { sed -e 's|^/lib/|/usr/lib/|' -e 's/\.\(gz\|bz2\|xz\|zst\)$//' | grep -v '^/usr/lib/\.build-id\(/\|$\)' | sort -u; }

# Files and links in the rpm (its directories are left out: %{FILEMODES} starts with d).
rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpmfile" 2>"$tmp/rpm.err" |
    awk '$1 !~ /^d/ { print $2 }' | norm >"$tmp/rpm.list" || fail "rpm -qp failed: $(cat "$tmp/rpm.err")"
[[ -s $tmp/rpm.list ]] || fail "empty file list in $rpmfile"

# What meson installs.
meson setup "$tmp/build" "$TOP" -Dprefix=/usr >"$tmp/meson.log" 2>&1 || fail "meson setup failed: $(tail -20 "$tmp/meson.log")"
meson install -C "$tmp/build" --destdir "$tmp/root" >>"$tmp/meson.log" 2>&1 ||
    fail "meson install failed: $(tail -20 "$tmp/meson.log")"
(cd "$tmp/root" && find . \( -type f -o -type l \) | sed 's|^\.||') | norm >"$tmp/meson.list"

if ! diff -u "$tmp/meson.list" "$tmp/rpm.list" >"$tmp/diff"; then
    fail "the rpm's files differ from meson's install (- meson only, + rpm only):"$'\n'"$(cat "$tmp/diff")"
fi
log "$(wc -l <"$tmp/rpm.list") files, the same in the rpm and in meson's install"
# The scriptlets use the systemd and sysusers macros (or the spec's fallbacks).
scripts=$(rpm -qp --scripts "$rpmfile")
grep -q 'systemd-sysusers\|useradd\|groupadd' <<<"$scripts" || fail "no sysusers code in %pre"
grep -q 'preset' <<<"$scripts" || fail "no systemctl preset in %post"
log "ok"
exit 0
