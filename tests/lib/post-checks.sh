# shellcheck shell=bash
# tests/lib/post-checks.sh - the box-wide checks tests/run makes after a pass's integration tests
# (post_checks, leak_check) and the sanitizer set-up of the ASan pass (setup_sanitizers,
# broker_sanitizer_dropin). Sourced by tests/run, whose working directory is the top of the tree;
# it uses tests/run's $BOXCMD, $LOGDIR and record().

# setup_sanitizers BOX: broker and launcher get sanitizer options; broker-call logs its reports
# to /var/log/mcp-sanitizers/ (scanned afterwards) via a wrapper.
setup_sanitizers() {
    local box=$1 root
    root=$("$BOXCMD" root "$box") || return 1
    mkdir -p "$root/etc/systemd/system/mcp-exec-broker.service.d" "$root/etc/systemd/system.conf.d" \
        "$root/usr/local/lib/mcp-tests" "$root/var/log/mcp-sanitizers"
    chmod 1777 "$root/var/log/mcp-sanitizers"
    # Every unit, so also each run's mcp-exec-launch: no leak check (LeakSanitizer needs ptrace,
    # which the run's seccomp filter refuses; the launcher execs Python anyway), and any error
    # aborts, so a report cannot go unnoticed as a wrong result.
    cat >"$root/etc/systemd/system.conf.d/50-mcp-sanitizers.conf" <<'EOF'
[Manager]
DefaultEnvironment="ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:print_summary=1:quarantine_size_mb=32" "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1"
EOF
    # The broker: errors abort (and so show up as a crash besides the report). Its leak check at
    # exit runs once, at the end (leak_check): LeakSanitizer, under the broker's seccomp filter,
    # now and then hangs in its stop-the-world at exit (seen 2 times in about 40 stops).
    broker_sanitizer_dropin "$root" 0
    if [[ -x $root/usr/local/bin/mcp-exec-broker-call && ! -L $root/usr/local/bin/mcp-exec-broker-call ]] &&
        ! grep -q mcp-tests "$root/usr/local/bin/mcp-exec-broker-call" 2>/dev/null; then
        mv "$root/usr/local/bin/mcp-exec-broker-call" "$root/usr/local/lib/mcp-tests/mcp-exec-broker-call"
        cat >"$root/usr/local/bin/mcp-exec-broker-call" <<'EOF'
#!/bin/sh
# Sanitizer wrapper installed by tests/run: reports go to /var/log/mcp-sanitizers/.
ASAN_OPTIONS=log_path=/var/log/mcp-sanitizers/broker-call:detect_leaks=1:print_summary=1
UBSAN_OPTIONS=log_path=/var/log/mcp-sanitizers/broker-call:print_stacktrace=1
export ASAN_OPTIONS UBSAN_OPTIONS
exec /usr/local/lib/mcp-tests/mcp-exec-broker-call "$@"
EOF
        chmod 0755 "$root/usr/local/bin/mcp-exec-broker-call"
    fi
    "$BOXCMD" exec "$box" -- sh -ec '
        systemctl daemon-reexec
        systemctl stop mcp-exec-broker.service 2>/dev/null || true
        systemctl restart mcp-exec-broker.socket'
}

# broker_sanitizer_dropin ROOT LEAKS: the broker's sanitizer options; with LEAKS=1 also its leak
# check at exit, which needs ptrace (LeakSanitizer stops the process's threads with it): the
# broker's system call filter is lifted for that.
broker_sanitizer_dropin() {
    local f=$1/etc/systemd/system/mcp-exec-broker.service.d/50-sanitizers.conf
    {
        printf '[Service]\n'
        printf 'Environment="ASAN_OPTIONS=detect_leaks=%s:abort_on_error=1:halt_on_error=1:print_summary=1:quarantine_size_mb=32"' "$2"
        printf ' "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1"\n'
        if (($2)); then printf 'SystemCallFilter=\nTimeoutStopSec=60\n'; fi
    } >"$f"
}

# leak_check VARIANT BOX [TAG]: restart the broker with its leak check on, take it through the usual
# paths (runs, a timeout, cancels, a malformed request), stop it and see that it exits cleanly.
leak_check() {
    local v=$1 box=$2 root log=$LOGDIR/$1${3:+-$3}-post-leak-check.log cursor rp=$1/post${3:+/$3}
    root=$("$BOXCMD" root "$box")
    broker_sanitizer_dropin "$root" 1
    {
        cursor=$("$BOXCMD" exec "$box" -- journalctl -n 0 --show-cursor --no-pager | sed -n 's/^-- cursor: //p')
        "$BOXCMD" exec "$box" -- sh -c '
            systemctl daemon-reload
            systemctl stop mcp-exec-broker.service
            systemctl reset-failed mcp-exec-broker.service mcp-exec-broker.socket 2>/dev/null
            systemctl restart mcp-exec-broker.socket
            echo "print(1)" | mcp-exec-broker-call --count 4 --parallel 2 -
            echo "import time; time.sleep(30)" | mcp-exec-broker-call --timeout 1 -
            echo "import time; time.sleep(30)" | mcp-exec-broker-call --cancel-after-ms 300 -
            echo "print(2)" | mcp-exec-broker-call --cancel-after-ms 1 -
            python3 -c "
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(\"/run/mcp-exec/broker.sock\")
s.send(b\"{not json\")
print(s.recv(4096))"
            systemctl stop mcp-exec-broker.service
            systemctl show -p Result -p ExecMainCode -p ExecMainStatus mcp-exec-broker.service'
        "$BOXCMD" exec "$box" -- journalctl --no-pager --after-cursor="$cursor" -u mcp-exec-broker.service
    } >"$log" 2>&1
    broker_sanitizer_dropin "$root" 0
    "$BOXCMD" exec "$box" -- systemctl daemon-reload >/dev/null 2>&1
    if grep -q '^Result=success' "$log" && grep -q '^ExecMainCode=1' "$log" && grep -q '^ExecMainStatus=0' "$log" &&
        ! grep -q 'Sanitizer' "$log"; then
        record PASS "$rp/broker-leak-check"
    else
        TAIL_LINES=60 record FAIL "$rp/broker-leak-check" "$log"
    fi
}

# post_checks VARIANT BOX SANITIZED [TAG]: box-wide checks after the integration tests. TAG
# names the box among those of the pass (w1, w2, w1r1, ...) in the result lines
# (VARIANT/post/TAG/CHECK) and logs (VARIANT-TAG-post-*.log).
post_checks() {
    local v=$1 box=$2 san=$3 tag=${4-} log root
    local rp=$v/post${tag:+/$tag} lp=$v${tag:+-$tag}
    root=$("$BOXCMD" root "$box")
    # The broker exits cleanly when stopped (and runs its leak check then).
    "$BOXCMD" exec "$box" -- systemctl stop mcp-exec-broker.service >/dev/null 2>&1
    "$BOXCMD" exec "$box" -- journalctl --flush >/dev/null 2>&1

    # No run unit and no session unit (session_create) of any test is left: the broker's stop
    # takes them all.
    log=$LOGDIR/$lp-post-leftovers.log
    "$BOXCMD" exec "$box" -- systemctl list-units --all 'mcp-exec-run-*' 'mcp-exec-session-*' --plain --no-legend \
        --no-pager >"$log" 2>&1
    if grep -Eq 'mcp-exec-(run|session)-' "$log"; then record FAIL "$rp/no-leftover-runs" "$log"; else record PASS "$rp/no-leftover-runs"; fi

    # Privacy over the whole suite: no canary from any test's code, stdin or output in the
    # journal, a unit property or a process's argv/environment (tests/lib/privacy-scan).
    log=$LOGDIR/$lp-post-privacy.log
    local ctrl=mcpprivctrl$RANDOM$RANDOM
    install -m0755 tests/lib/privacy-scan "$root/usr/local/lib/privacy-scan"
    if "$BOXCMD" exec "$box" -- sh -c 'logger -t mcp-privacy-control "$1" && exec /usr/local/lib/privacy-scan "$1"' sh "$ctrl" >"$log" 2>&1; then
        record PASS "$rp/no-canary-anywhere"
    else
        record FAIL "$rp/no-canary-anywhere" "$log"
    fi

    log=$LOGDIR/$lp-post-crashes.log
    "$BOXCMD" exec "$box" -- journalctl --no-pager -o short-monotonic -u mcp-exec-broker.service >"$log" 2>&1
    # test-fault-broker-kill SIGKILLs the broker on purpose and announces each kill first; those
    # SIGKILLs are not crashes. Any other signal, a core dump or one SIGKILL more is.
    local deliberate sigkills
    deliberate=$("$BOXCMD" exec "$box" -- journalctl --no-pager -o cat -t mcp-exec-tests 2>/dev/null |
        grep -c '^MCP_TEST_DELIBERATE_KILL=mcp-exec-broker.service ')
    sigkills=$(grep -c 'mcp-exec-broker\.service: Main process exited, code=killed, status=9/KILL' "$log")
    echo "deliberate broker SIGKILLs announced: $deliberate, seen: $sigkills" >>"$log"
    if grep -E 'mcp-exec-broker\.service: Main process exited, code=(killed|dumped)' "$log" |
        grep -vq 'code=killed, status=9/KILL' || ((sigkills > deliberate)); then
        grep -E -B30 'Main process exited, code=(killed|dumped)' "$log" >"$log.excerpt"
        record FAIL "$rp/broker-no-crash" "$log.excerpt"
    else
        record PASS "$rp/broker-no-crash"
    fi

    if ((san)); then
        leak_check "$v" "$box" "$tag"
        log=$LOGDIR/$lp-post-sanitizers.log
        {
            "$BOXCMD" exec "$box" -- journalctl --no-pager -o short-monotonic |
                grep -E -A40 'ERROR: (Address|Leak|Undefined)Sanitizer|LeakSanitizer has encountered|runtime error:|SUMMARY: (Address|Undefined)'
            for f in "$root"/var/log/mcp-sanitizers/*; do
                [[ -s $f ]] && { echo "== $f"; cat "$f"; }
            done
            grep -l -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$LOGDIR/$v"-integration-*.log 2>/dev/null
        } >"$log" 2>&1
        if [[ -s $log ]]; then TAIL_LINES=80 record FAIL "$rp/no-sanitizer-reports" "$log"; else record PASS "$rp/no-sanitizer-reports"; fi
    fi
}
