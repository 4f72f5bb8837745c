#!/usr/bin/env bash
# MCP tasks (issue 21): a run longer than the TypeScript SDK's default request timeout (60 s).
# The v1 SDK's callToolStream over Streamable HTTP runs time.sleep(65) as a task, polls it with
# tasks/get and gets the whole result with tasks/result: its stdout and, where the box's
# /usr/bin/python3 has matplotlib (tests/lib/rich.sh), the figure as a PNG image block.
# (tests/node-clients/tasks.mjs long; the quick cases are test-tasks.)
# Plain pass only: 65 s of waiting; the sanitized front end serves tasks in test-tasks, by the same code.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/rich.sh"

URL=http://127.0.0.1:8080
TOKEN=tok-$RANDOM$RANDOM$RANDOM$RANDOM

. "$ITEST_DIR/lib/http.sh"
set_http_token "$TOKEN"
at_exit "bx systemctl stop 'mcp-exec-run-*' >/dev/null 2>&1"
if bx "$RICH_PYTHON" -c 'import matplotlib' >/dev/null 2>&1; then
    rich_setup
    fig=1
else
    log "no matplotlib in the box's $RICH_PYTHON: the run's figure is left out"
    fig=0
fi
restart_http

cnode tasks.mjs long "$URL" "$TOKEN" "$fig" || fail "the 65 s task"
assert_clean 15
pass
