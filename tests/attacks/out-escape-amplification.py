# attack: 1000000 control bytes (0x01) on stdout: each becomes \u0001 (6 bytes) in structuredContent and more again in the text content, so the reply grows ~13x
# expect: a well-formed result the SDK accepts, stdout verbatim (1000000 x U+0001), not truncated; the reply size is shown
# check: r.exit_code === 0 && r.truncated === false && r.stdout.length === 1000000 && /^\u0001+$/.test(r.stdout)
# check: res.content[0].text.length > 6000000
import sys

sys.stdout.write("\x01" * 1000000)
