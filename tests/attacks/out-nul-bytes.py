# attack: NUL bytes in stdout and stderr (C string handling in the server would cut the text there)
# expect: the text arrives whole, each NUL as U+0000 (JSON \u0000), nothing cut after it
# check: r.exit_code === 0 && r.stdout === 'a\u0000b\u0000\u0000c\n' + 'after-nul '.repeat(3) + '\n'
# check: r.stderr === '\u0000x\u0000\n'
import sys

sys.stdout.buffer.write(b"a\0b\0\0c\n" + b"after-nul " * 3 + b"\n")
sys.stderr.buffer.write(b"\0x\0\n")
