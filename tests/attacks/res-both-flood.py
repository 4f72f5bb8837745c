# attack: flood stdout and stderr at once, interleaved (32 MiB each), to get twice the output limit back
# expect: the limit covers stdout+stderr together: truncated true, their combined length <= 1 MiB (MCP_EXEC_MAX_OUTPUT_BYTES), both carry data, neither stream mixes in the other's bytes; exit 0
# check: r.exit_code === 0 && r.truncated === true && r.timed_out === false
# check: r.stdout.length + r.stderr.length <= 1048576 && r.stdout.length + r.stderr.length >= 1000000
# check: r.stdout.length > 0 && r.stderr.length > 0
# check: /^[o\n]*$/.test(r.stdout) && /^[e\n]*$/.test(r.stderr)
# timeout: 60
import os

out = b"o" * 4095 + b"\n"
err = b"e" * 4095 + b"\n"
for i in range(8192):
    os.write(1, out)
    os.write(2, err)
