# attack: send an input file of 10 MiB of base64 (7.5 MiB decoded), past MCP_EXEC_MAX_INPUT_BYTES (4 MiB)
# expect: the call is refused before anything runs, without decoding more than the limit: isError naming the limit
# files-bytes: 7864320
# timeout: 20
# check: res.isError === true && r === null && /MCP_EXEC_MAX_INPUT_BYTES/.test(res.content[0].text) && /files\[0\] \("big\.bin"\)/.test(res.content[0].text)
print("ESCAPED the code ran with 7.5 MiB of input files")
