# attack: after res-daemon-1-detach: look for the daemons' heartbeat files and for any process that is not ours
# expect: nothing: no heartbeat file in /tmp, /dev/shm or /var/tmp (the same heartbeat would be fresh if a daemon lived), no foreign process in /proc
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 4
import os, time
time.sleep(0.5)
for d in ("/tmp", "/dev/shm", "/var/tmp"):
    found = [n for n in os.listdir(d) if n.startswith("mcpatkb-daemon")]
    if found:
        print("ESCAPED daemon heartbeat in %s: %s" % (d, found))
    else:
        print("BLOCKED daemon heartbeat in %s: none" % d)
me = os.getpid()
others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != me]
if others:
    print("ESCAPED foreign processes visible: %s" % others)
else:
    print("BLOCKED foreign processes: none visible")
