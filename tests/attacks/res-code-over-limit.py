# attack: send 1100000 bytes of code, past MCP_EXEC_MAX_CODE_BYTES (1 MiB)
# expect: the call is refused before anything runs: isError with a message naming code, its size and the 1048576-byte limit
# check: res.isError === true && r === null
# check: /"code" is 1100000 bytes, more than the limit of 1048576 bytes/.test(res.content[0].text)
# code-bytes: 1100000
print("ESCAPED code over the limit: it ran")
