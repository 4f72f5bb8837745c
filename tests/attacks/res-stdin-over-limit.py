# attack: send 1100000 bytes of stdin, past MCP_EXEC_MAX_STDIN_BYTES (1 MiB)
# expect: the call is refused before anything runs: isError with a message naming stdin, its size and the 1048576-byte limit
# check: res.isError === true && r === null
# check: /"stdin" is 1100000 bytes, more than the limit of 1048576 bytes/.test(res.content[0].text)
# stdin-bytes: 1100000
import sys
print("ESCAPED stdin over the limit: the code ran and read %d bytes" % len(sys.stdin.buffer.read()))
