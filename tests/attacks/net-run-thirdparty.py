# attack: connect to a third party's unix socket of mode 0666 in /run (test-attacks.sh puts a listening decoy at /run/mcpatk-thirdparty/api.sock, as a print or container service would), and list what /run holds
# expect: the connect fails with ENOENT and /run holds nothing but systemd's directory (TemporaryFileSystem=/run:ro: an allow-list, not a deny-list of known services); the decoy logs nothing
# needs: hostlisten
# after: listeners-silent
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && /^BLOCKED .*Errno 2\]/m.test(r.stdout) && /^RUN \['systemd'\]$/m.test(r.stdout)
import os, socket

p = "/run/mcpatk-thirdparty/api.sock"
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(2)
try:
    s.connect(p)
    s.sendall(b"mcpatk third-party probe\n")
    print("ESCAPED %s: connected" % p)
except OSError as e:
    print("BLOCKED %s: %s" % (p, e))
print("RUN %s" % sorted(os.listdir("/run")))
