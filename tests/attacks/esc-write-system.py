# attack: write outside the run's own directories: create files in /etc, /usr, /usr/local/bin, /var, /var/lib, /var/cache, /var/log, /boot, /opt, /srv, /run, /run/lock, /run/systemd, /root, /home; open /etc/passwd and /usr/bin/python3 for writing
# expect: all 17 fail (EROFS/EACCES/ENOENT: ProtectSystem=strict, ProtectHome=yes, /run read-only); anything created by mistake is removed again
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 17
import errno, os

for d in ("/etc", "/usr", "/usr/local/bin", "/var", "/var/lib", "/var/cache", "/var/log", "/boot", "/opt", "/srv",
          "/run", "/run/lock", "/run/systemd", "/root", "/home"):
    p = d + "/mcpatkb-write"
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        os.unlink(p)
        print("ESCAPED create %s: created (and removed again)" % p)
    except OSError as e:
        print("BLOCKED create in %s: %s" % (d, errno.errorcode.get(e.errno, e.errno)))
for p in ("/etc/passwd", "/usr/bin/python3"):
    try:
        fd = os.open(p, os.O_WRONLY | os.O_APPEND)
        os.close(fd)
        print("ESCAPED open %s for writing" % p)
    except OSError as e:
        print("BLOCKED open %s for writing: %s" % (p, errno.errorcode.get(e.errno, e.errno)))
