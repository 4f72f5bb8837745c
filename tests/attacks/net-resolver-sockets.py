# attack: resolve names through a local resolver service over AF_UNIX, around the missing network: systemd-resolved's varlink socket, nscd, avahi (test-attacks.sh puts listening decoys there where the box has none)
# expect: every connect fails (/run is an empty tmpfs of the run: TemporaryFileSystem=/run:ro); the decoys log nothing
# needs: hostlisten
# after: listeners-silent
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 3
import json, socket

for p in ("/run/systemd/resolve/io.systemd.Resolve", "/run/nscd/socket", "/run/avahi-daemon/socket"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(p)
        if "Resolve" in p:
            s.sendall(json.dumps({"method": "io.systemd.Resolve.ResolveHostname",
                                  "parameters": {"name": "mcpatk-varlink-probe.example.com"}}).encode() + b"\0")
        else:
            s.sendall(b"RESOLVE-HOSTNAME mcpatk-probe.local\n" if "avahi" in p else b"\2\0\0\0")
        print("ESCAPED %s: connected" % p)
    except OSError as e:
        print("BLOCKED %s: %s" % (p, e))
