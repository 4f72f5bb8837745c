# attack: control for res-code-over-limit: exactly MCP_EXEC_MAX_CODE_BYTES (1048576) of code
# expect: accepted and run (the launcher's own limit in the sandbox agrees with the front end's); exit 0
# check: r.exit_code === 0 && r.stdout === 'CODE RAN\n'
# code-bytes: 1048576
print("CODE RAN")
