# shellcheck shell=bash
# tests/lib/attack-cases.sh - which attack cases (tests/attacks/*.py, *.js, *.sh) a test runs: the shared part
# of test-attacks, test-egress-attacks and test-packages-attacks. Source it after itest.sh (and
# node-clients.sh, for attack_cases_run).

# attack_cases_copy WHAT FILE...: copies to $HDIR/cases (0644) those FILEs whose name matches a
# glob of ATTACK_CASES (blank- or comma-separated, on the file name with or without its extension; unset or
# empty: all of them); fails, naming WHAT, when none is left. Sets N_CASES.
attack_cases_copy() {
    local what=$1 f b g keep files=() globs=()
    shift
    IFS=$' \t,' read -ra globs <<<"${ATTACK_CASES-}"
    for f in "$@"; do
        [[ -e $f ]] || continue
        b=$(basename "$f")
        if [[ -n ${ATTACK_CASES-} ]]; then
            keep=0
            for g in "${globs[@]}"; do
                # shellcheck disable=SC2053 # a glob on purpose
                [[ $b == $g || ${b%.*} == $g ]] && keep=1
            done
            ((keep)) || continue
        fi
        files+=("$f")
    done
    ((${#files[@]} > 0)) || fail "no $what${ATTACK_CASES:+ matching $ATTACK_CASES}"
    mkdir -p "$HDIR/cases"
    cp "${files[@]}" "$HDIR/cases/"
    chmod 0644 "$HDIR/cases/"*
    # shellcheck disable=SC2034 # read by the test that sourced this
    N_CASES=${#files[@]}
}

# attack_cases_run WHAT BUDGET_S [VAR=VALUE...]: runs the copied cases through the SDK harness
# (attacks.mjs, node-clients.sh) over stdio, then over HTTP, with the extra harness settings
# given; reports each transport's results and fails, naming WHAT, unless every case ran and
# passed on both. Canaries in the harness's output are masked: the logs stay free of them.
attack_cases_run() {
    local what=$1 budget=$2 transport t0 rc ran failed=0
    shift 2
    for transport in stdio http; do
        t0=$SECONDS
        cnode attacks.mjs ATTACK_RESULTS="$BDIR/results-$transport.jsonl" ATTACK_TRANSPORT="$transport" \
            ATTACK_BUDGET_S="$budget" "$@" "$BDIR/cases" 2>&1 | sed 's/mcpcanary[a-z0-9]*/<canary>/g' >&2
        rc=${PIPESTATUS[0]}
        log "$transport: harness exit status $rc after $((SECONDS - t0)) s"
        [[ -s $HDIR/results-$transport.jsonl ]] || fail "$transport: the harness wrote no results"
        "$ITEST_DIR/attacks/report" "$HDIR/results-$transport.jsonl" >&2 || true
        ran=$(grep -c . "$HDIR/results-$transport.jsonl")
        ((ran == N_CASES)) || fail "$transport: $ran cases ran, but there are $N_CASES case files"
        ((rc == 0)) || failed=1
    done
    ((failed == 0)) || fail "$what attack cases failed (see above)"
}
