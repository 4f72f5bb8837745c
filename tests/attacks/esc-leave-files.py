# attack: leave files for the next run (esc-m-find-leftovers looks for them): world-readable markers in /tmp, /var/tmp, /dev/shm, $HOME, a POSIX message queue file in /dev/mqueue, and attempts at /run/lock and /var/lib/private
# expect: the markers are created only in this run's private places (at least /tmp, /var/tmp, /dev/shm, $HOME); /run/lock and /var/lib/private refuse; the next runs see none of it
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^LEFT /gm) || []).length >= 4 && (r.stdout.match(/^BLOCKED /gm) || []).length === 2
import errno, os

home = os.environ.get("HOME", "/tmp")
for d in ("/tmp", "/var/tmp", "/dev/shm", home, "/dev/mqueue"):
    p = "%s/mcpatkb-leave-%s" % (d, d.strip("/").replace("/", "-"))
    try:
        with open(p, "w") as f:
            f.write("left by esc-leave-files\n") if not d.startswith("/dev/mqueue") else None
        os.chmod(p, 0o666)
        print("LEFT %s" % p)
    except OSError as e:
        print("INFO could not leave %s: %s" % (p, errno.errorcode.get(e.errno, e.errno)))
for d in ("/run/lock", "/var/lib/private"):
    p = d + "/mcpatkb-leave"
    try:
        with open(p, "w") as f:
            f.write("left by esc-leave-files\n")
        os.chmod(p, 0o666)
        print("ESCAPED left %s in a shared place" % p)
    except OSError as e:
        print("BLOCKED leave %s: %s" % (p, errno.errorcode.get(e.errno, e.errno)))
