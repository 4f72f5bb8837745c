# attack: an input file of exactly MCP_EXEC_MAX_INPUT_BYTES (4 MiB, sent as base64): the control for the case past it
# expect: the run gets the whole file, byte for byte, in its working directory
# files-bytes: 4194304
# timeout: 20
# check: r.exit_code === 0 && r.stdout === 'big.bin 4194304 True /tmp\n'
import os

data = open("big.bin", "rb").read()
print("big.bin", len(data), data == b"a" * 4194304, os.getcwd())
