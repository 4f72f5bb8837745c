# attack: a canary in stdout and stderr (and in stdin, echoed back): output must reach only the caller, never the journal or a unit property (the suite's post-check scans both for mcpcanary)
# expect: the canaries come back in the result and nowhere else
# stdin: mcpcanaryinatkb7\n
# check: r.exit_code === 0 && r.stdout === 'mcpcanaryoutatkq4\nmcpcanaryinatkb7\n' && r.stderr === 'mcpcanaryerratkz9\n'
import sys

print("mcpcanaryoutatkq4")
print(sys.stdin.read(), end="")
print("mcpcanaryerratkz9", file=sys.stderr)
