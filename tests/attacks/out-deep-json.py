# attack: output that looks like deeply nested JSON ('[' x 100000 then ']' x 100000 on stdout, '{"a":' x 50000 on stderr), against a server or client that parses output
# expect: both come back verbatim as plain strings; the SDK parses the result without a recursion error
# check: r.exit_code === 0 && r.truncated === false && r.stdout === '['.repeat(100000) + ']'.repeat(100000) + '\n'
# check: r.stderr === '{"a":'.repeat(50000) + '\n'
import sys

sys.stdout.write("[" * 100000 + "]" * 100000 + "\n")
sys.stderr.write('{"a":' * 50000 + "\n")
