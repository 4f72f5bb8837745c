# attack: 1000000 control bytes (0x01) on stdout, under the 1 MiB output limit: each becomes \u0001 (6 bytes) in structuredContent and \\u0001 (7) in the text content, a ~13 MB reply, past the 10 MiB a v1 SDK stdio client buffers for one message (it then closes the session)
# expect: a result the SDK accepts (the server keeps its replies within what clients take), stdout verbatim (1000000 x U+0001) or truncated: true
# check: r.exit_code === 0 && /^\u0001*$/.test(r.stdout) && (r.truncated ? r.stdout.length < 1000000 : r.stdout.length === 1000000)
import sys

sys.stdout.write("\x01" * 1000000)
