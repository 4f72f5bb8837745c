# attack: point MCP_EXEC_TOOLS_FD at other descriptors of the run (stdin, stdout, the code's file, the launcher's control socket, a closed number, a socket of its own, garbage) and call a tool through mcp_servers
# expect: each gives a clear ToolsUnavailable before anything is sent (the launcher's control socket is no stream socket, stdio is no socket); the run's real connection still works afterwards
# timeout: 30
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 7 && !/ESCAPED/.test(r.stdout)
# check: /^CONTROL real connection: Echo: back$/m.test(r.stdout)
import os, socket, sys

real = os.environ["MCP_EXEC_TOOLS_FD"]
own = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
seqs = {"stdin": "0", "stdout": "1", "the code's file": "3", "the launcher's control socket": "4",
        "a closed number": "77", "a seqpacket socket of its own": str(own.fileno()), "garbage": "8; rm -rf /"}


def fresh():
    for m in [m for m in sys.modules if m == "mcp_servers" or m.startswith("mcp_servers.")]:
        del sys.modules[m]
    import mcp_servers
    return mcp_servers


for what, value in seqs.items():
    os.environ["MCP_EXEC_TOOLS_FD"] = value
    m = fresh()
    try:
        m.call("everything", "echo", message="x")
        print("ESCAPED %s (%s): the call was answered" % (what, value))
    except m.ToolsUnavailable as e:
        print("BLOCKED %s (%s): ToolsUnavailable: %s" % (what, value, str(e)[:120]))
    except Exception as e:
        print("WRONG %s (%s): %s: %s" % (what, value, type(e).__name__, e))
os.environ["MCP_EXEC_TOOLS_FD"] = real
print("CONTROL real connection: %s" % fresh().call("everything", "echo", message="back"))
