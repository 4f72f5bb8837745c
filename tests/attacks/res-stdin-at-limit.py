# attack: control for res-stdin-over-limit: exactly MCP_EXEC_MAX_STDIN_BYTES (1048576) of stdin
# expect: accepted: the program reads all 1048576 bytes, the canary first and a newline last; exit 0
# check: r.exit_code === 0 && r.stdout === 'STDIN 1048576 head-ok tail-ok\n'
# stdin-bytes: 1048576
import sys
data = sys.stdin.buffer.read()
print("STDIN %d %s %s" % (len(data), "head-ok" if data.startswith(b"mcpcanarystdin") else "head-bad",
                          "tail-ok" if data.endswith(b"x\n") else "tail-bad"))
