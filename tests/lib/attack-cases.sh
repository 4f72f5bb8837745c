# shellcheck shell=bash
# tests/lib/attack-cases.sh - which attack cases (tests/attacks/*.py) a test runs: the shared part
# of test-attacks, test-egress-attacks and test-packages-attacks. Source it after itest.sh.

# attack_cases_copy WHAT FILE...: copies to $HDIR/cases (0644) those FILEs whose name matches a
# glob of ATTACK_CASES (blank- or comma-separated, on the file name with or without .py; unset or
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
                [[ $b == $g || ${b%.py} == $g ]] && keep=1
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
