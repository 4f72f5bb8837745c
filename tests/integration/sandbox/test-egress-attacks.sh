#!/usr/bin/env bash
# The egress attack cases (tests/attacks/egr-*.py, format in tests/attacks/README.md), each sent
# as an exec call with `network: web` through the real v1 SDK client, once over stdio
# (`mcp-exec stdio`) and once over HTTP (StreamableHTTPClientTransport to mcp-exec.socket), against
# the test internet of tests/lib/egress-net.sh (a DNS stub and servers that log everything the
# cases' checks read). test-attacks.sh does not run them: they need that internet and a policy.
# The harness checks after every case, as for the other cases, that nothing of the run is left.
#
# ATTACK_CASES='egr-sni*' (globs on the file name) runs a subset.
# Plain pass only: egressd's parsing of what the sandbox sends runs sanitized in the ASan pass of
# test-egress (every verdict, a POST body, a ClientHello, the caps), in the component test and in
# the fuzzers of the request head and the ClientHello; these cases are about what is reachable,
# the same in both builds. That saves about 50 s of a full run.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/attack-cases.sh"
. "$ITEST_DIR/lib/http.sh"
. "$ITEST_DIR/lib/egress-net.sh"

bx systemctl cat mcp-exec-egress.socket >/dev/null 2>&1 || fail "mcp-exec-egress.socket is not installed in the box"
egress_net_up
set_config MCP_EXEC_POOL_SIZE=0 \
    'MCP_EXEC_EGRESS_POLICY_WEB="allowed.test tls.test other.test loop.test meta.test priv.test mixed.test :80 :443"' \
    MCP_EXEC_EGRESS_TESTING_PUBLIC=192.0.2.0/24
restart_http
stop_frontend
bx systemctl stop mcp-exec-egress.service >/dev/null 2>&1
at_exit 'bx systemctl stop mcp-exec-egress.service >/dev/null 2>&1'

# Python's, bash's and JavaScript's (issue 42: the proxy by the environment's http_proxy, as curl reads
# it; node through the bootstrap's mcp-exec-proxy.js), JavaScript's where the box has node.
cases=("$ITEST_DIR"/attacks/egr-*.py "$ITEST_DIR"/attacks/egr-*.sh)
bx test -x /usr/bin/node && cases+=("$ITEST_DIR"/attacks/egr-*.js)
attack_cases_copy "egr-* cases" "${cases[@]}"
log "$N_CASES cases, over stdio and HTTP"

attack_cases_run egress 100 ATTACK_EGRESS_LOGS="$EGRESS_BINET/dns.log,$EGRESS_BINET/http.log"
egress_dns_asked denied.test && fail "the DNS stub was asked for denied.test"
assert_clean 15
egress_assert_no_crash
pass
