#!/usr/bin/env bash
# The v2 TypeScript client (@modelcontextprotocol/client), a real MCP client, over stdio
# (`mcp-exec stdio`) with versionNegotiation {mode: 'auto'}: it probes the stateless 2026-07-28
# era with server/discover and must end up there (mcp-exec implements it), then tools/list and
# tools/call work; the recorded wire shows no initialize and the version in every _meta
# (tests/node-clients/v2-client.mjs).
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

cnode v2-client.mjs || fail "the v2 client checks failed (see above)"
assert_clean 15
pass
