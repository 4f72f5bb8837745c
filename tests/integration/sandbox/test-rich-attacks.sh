#!/usr/bin/env bash
# The attack cases on figures and files (tests/attacks/*-outputs-*.py and *-inputs-*.py, format in
# tests/attacks/README.md), through the same harness as test-attacks.sh (tests/node-clients/attacks.mjs:
# the v1 SDK Client over `mcp-exec stdio`, after every case the service answers, the next run is
# clean and nothing is left), with matplotlib in the sandbox (tests/lib/rich.sh): links, a FIFO
# and a socket, a growing file, 10,000 files, a sparse file, a decompression bomb, fake images, odd
# names, a figure flood and a forged channel in /tmp/outputs; bad, duplicate, oversized and
# invalid base64 input files.
#
# ATTACK_CASES='*-outputs-fifo' (globs on the file name) runs a subset.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/rich.sh"

mkdir -p "$HDIR/cases"
shopt -s nullglob
files=("$ITEST_DIR"/attacks/{net,res,esc,out}-outputs-*.py "$ITEST_DIR"/attacks/{net,res,esc,out}-inputs-*.py)
shopt -u nullglob
((${#files[@]} > 0)) || fail "no *-outputs-* or *-inputs-* cases in $ITEST_DIR/attacks"
cp "${files[@]}" "$HDIR/cases/"
chmod 0644 "$HDIR/cases/"*

rich_setup

t0=$SECONDS
# The test's timeout is 300 s: what is left of 270 s after the set-up goes to the cases.
budget=$((270 - SECONDS - 15))
cnode attacks.mjs ATTACK_RESULTS="$BDIR/results.jsonl" ATTACK_BUDGET_S="$budget" ATTACK_CASES="${ATTACK_CASES-}" \
    "$BDIR/cases" 2>&1 | sed 's/mcpcanary[a-z0-9]*/<canary>/g' >&2
rc=${PIPESTATUS[0]}
log "harness exit status $rc after $((SECONDS - t0)) s"

[[ -s $HDIR/results.jsonl ]] || fail "the harness wrote no results"
"$ITEST_DIR/attacks/report" "$HDIR/results.jsonl" >&2 || log "(the report exits non-zero when a case failed)"
if [[ -z ${ATTACK_CASES-} ]]; then
    ran=$(grep -c . "$HDIR/results.jsonl")
    ((ran == ${#files[@]})) || fail "$ran cases ran, but there are ${#files[@]} case files"
fi
((rc == 0)) || fail "attack cases failed (see above)"
assert_clean 15
pass
