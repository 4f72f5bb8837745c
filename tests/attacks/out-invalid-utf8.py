# attack: invalid UTF-8 on stdout and stderr (lone continuation bytes, overlong encodings, surrogates, truncated sequences, 0xFF)
# expect: a well-formed result the SDK accepts; each invalid byte becomes U+FFFD, valid text around it is kept
# check: r.exit_code === 0 && r.stdout === 'a\ufffdb\ufffd\ufffdc\ufffd\ufffd\ufffdd\ufffd\ufffde\ufffd\u00e9\u20ac\n'
# check: r.stderr === 'x\ufffd\ufffd\ufffd\ufffdy\n'
# check: !/[\ud800-\udfff]/.test(r.stdout.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))
import sys

# 0x80: lone continuation; C0 AF: overlong "/"; ED A0 80: a UTF-16 surrogate; E2 82: truncated euro
# sign before "e"; FF: never valid; then valid é and €.
sys.stdout.buffer.write(b"a\x80b\xc0\xafc\xed\xa0\x80d\xe2\x82e\xff\xc3\xa9\xe2\x82\xac\n")
sys.stderr.buffer.write(b"x\xf0\x80\x80\x80y\n")
