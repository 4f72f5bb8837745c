# attack: find every unix socket file the run can see (/run, /var/run, /dev, /tmp, /var/tmp, /var/lib, /srv, /opt) and connect to each, stream, datagram and seqpacket
# expect: /run is the run's own empty tmpfs, so at most one socket is seen, PID 1's read-only user records (userdb DynamicUser), reported as INFO; the decoys test-attacks.sh put in /run (a third party's 0666 socket among them) are not even visible
# needs: hostlisten
# after: listeners-silent
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && /^SOCKETS [01]$/m.test(r.stdout)
import os, socket, stat

# Reachable by design: PID 1 answers every DynamicUser= unit's user lookups there (read-only).
KNOWN = {"/run/systemd/userdb/io.systemd.DynamicUser"}
found = set()
for root in ("/run", "/var/run", "/dev", "/tmp", "/var/tmp", "/var/lib", "/srv", "/opt"):
    for d, dirs, files in os.walk(root, onerror=lambda e: None):
        for f in files + dirs:
            p = os.path.join(d, f)
            try:
                if stat.S_ISSOCK(os.lstat(p).st_mode):
                    found.add(os.path.realpath(p))
            except OSError:
                pass
print("SOCKETS %d" % len(found))
for p in sorted(found):
    err = None
    for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
        s = socket.socket(socket.AF_UNIX, typ)
        s.settimeout(2)
        try:
            s.connect(p)
            err = None
            break
        except OSError as e:
            err = e if err is None or e.errno != 91 else err  # keep the first error that is not EPROTOTYPE
        finally:
            s.close()
    if err is None:
        print("%s %s: connected (%s)" % ("INFO known" if p in KNOWN else "ESCAPED", p, typ.name))
    else:
        print("BLOCKED %s: %s" % (p, err))
