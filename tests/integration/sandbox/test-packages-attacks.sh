#!/usr/bin/env bash
# The package attack cases (tests/attacks/pkg-*.py, format in tests/attacks/README.md), each sent
# as an exec call (with its `# packages:`) through the real v1 SDK client, once over stdio
# (`mcp-exec stdio`) and once over HTTP (StreamableHTTPClientTransport to mcp-exec.socket),
# against the wheelhouse of tests/lib/packages.sh (filled with `mcp-exec wheels add`): specs that
# are pip options, direct references or too many; pip in the code pointed at another index (no
# network) or writing into the wheelhouse. test-attacks.sh does not run them: they need the
# wheelhouse. The harness checks after every case, as for the others, that nothing is left.
# Afterwards the wheelhouse holds exactly what `wheels add` put there, byte for byte.
#
# ATTACK_CASES='pkg-spec*' (globs on the file name) runs a subset.
# Plain pass only: the specs are refused by C parsers that run sanitized in the ASan pass's unit
# tests (tests/mcp test-tool-arg-packages, tests/shared); the rest is pip against a read-only mount,
# the same in both builds.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/attack-cases.sh"
. "$ITEST_DIR/lib/http.sh"
. "$ITEST_DIR/lib/packages.sh"

packages_wheelhouse_up
set_config MCP_EXEC_POOL_SIZE=0
restart_http
stop_frontend

attack_cases_copy "pkg-*.py cases" "$ITEST_DIR"/attacks/pkg-*.py
log "$N_CASES cases, over stdio and HTTP"
# wh_state: the wheelhouse's names and bytes, to compare after the cases.
wh_state() { (cd "$BOXROOT$PKG_WH" && find . -printf '%p %s %m %U\n' | LC_ALL=C sort && sha256sum ./*); }
wh_before=$(wh_state)

attack_cases_run package 150
(cd "$BOXROOT$PKG_WH" && sha256sum --quiet -c SHA256SUMS) || fail "the wheelhouse's wheels no longer match the manifest"
[[ $(wh_state) == "$wh_before" ]] || fail "the wheelhouse changed during the cases:"$'\n'"$(diff <(echo "$wh_before") <(wh_state))"
assert_clean 15
pass
