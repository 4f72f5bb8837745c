# attack: look for the HTTP auth token: the credential directories, /etc/credstore, /etc/mcp-exec/mcp-exec.conf, the front end's environment, and our own environment (any name with TOKEN, AUTH, SECRET, KEY, CREDENTIAL)
# expect: none readable (missing, hidden or permission denied); our environment is only the fixed PATH/HOME/TMPDIR/LANG set and systemd's own, with nothing token-like
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 9
import errno, glob, os

def attempt(what, fn):
    try:
        v = fn()
    except OSError as e:
        print("BLOCKED %s: %s" % (what, errno.errorcode.get(e.errno, e.errno)))
        return
    print("ESCAPED %s: got %d items/bytes" % (what, len(v)))

attempt("list /run/credentials", lambda: os.listdir("/run/credentials"))
attempt("read /run/credentials/mcp-exec.service/mcp-exec.auth-token",
        lambda: open("/run/credentials/mcp-exec.service/mcp-exec.auth-token", "rb").read())
attempt("list /etc/credstore", lambda: os.listdir("/etc/credstore"))
attempt("read /etc/credstore/mcp-exec.auth-token", lambda: open("/etc/credstore/mcp-exec.auth-token", "rb").read())
attempt("list /etc/credstore.encrypted", lambda: os.listdir("/etc/credstore.encrypted"))
# The configuration may carry MCP_EXEC_AUTH_TOKEN=; the file is readable only if it has no secret.
def conf():
    data = open("/etc/mcp-exec/mcp-exec.conf", "rb").read()
    if b"TOKEN" in data.upper():
        return data
    raise OSError(errno.ENODATA, "readable, but names no token")
attempt("read a token from /etc/mcp-exec/mcp-exec.conf", conf)
attempt("front end %d environ" % @FRONTEND_PID@, lambda: open("/proc/%d/environ" % @FRONTEND_PID@, "rb").read())
if "CREDENTIALS_DIRECTORY" in os.environ:
    print("ESCAPED $CREDENTIALS_DIRECTORY is set: %s" % os.environ["CREDENTIALS_DIRECTORY"])
else:
    print("BLOCKED $CREDENTIALS_DIRECTORY: not set")
suspicious = [k for k in os.environ if any(w in k.upper() for w in ("TOKEN", "AUTH", "SECRET", "KEY", "CREDENTIAL", "MCP_EXEC"))]
print("INFO environment names: %s" % sorted(os.environ))
if suspicious:
    print("ESCAPED token-like environment variables: %s" % suspicious)
else:
    print("BLOCKED token-like environment variables: none")
