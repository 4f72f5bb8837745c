#!/usr/bin/env bash
# Every MCP protocol revision negotiated at least once, in raw newline-delimited JSON-RPC through
# `mcp-exec stdio` (tests/node-clients/revisions.mjs): initialize with 2024-11-05, 2025-03-26,
# 2025-06-18 and 2025-11-25 is echoed and tools work as each revision defines them; an unknown
# version gets our newest; a request before initialize gets an error; a batch is served under
# 2025-03-26 and refused under 2025-06-18; 2026-07-28 through server/discover and a tools/call
# with the version in _meta. The journal records the negotiated versions.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

cursor=$(journal_cursor)
cnode revisions.mjs || fail "the protocol revision checks failed (see above)"

# The server logged each negotiated session with its version. (Filtered here, not with journalctl
# matches: systemd 252's --after-cursor then skips the first matching entry.)
versions=$(journal_since "$cursor" -o json |
    "$PY" -c '
import json, sys
vs = set()
for line in sys.stdin:
    line = line.strip()
    if line:
        e = json.loads(line)
        if e.get("MCP_CLIENT_NAME") == "mcp-exec-raw-test" and e.get("MESSAGE", "").startswith("Session "):
            vs.add(e.get("MCP_PROTOCOL_VERSION", ""))
print(" ".join(sorted(vs)))')
log "versions in the journal: $versions"
for v in 2024-11-05 2025-03-26 2025-06-18 2025-11-25; do
    [[ " $versions " == *" $v "* ]] || fail "no journal entry of a session initialized with $v (saw: $versions)"
done
assert_clean 15
pass
