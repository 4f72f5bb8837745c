# attack: list network interfaces (/proc/net/dev, if_nameindex, /sys/class/net) to find a way out
# expect: /proc/net/dev lists only lo; if_nameindex lists only lo or fails. /sys/class/net is the box's sysfs (systemd < 253 does not remount /sys for PrivateNetwork=), so it may list the box's interfaces too: reported as INFO, read-only, not a way out
# check: r.exit_code === 0 && /^IFACES proc lo$/m.test(r.stdout) && /^IFACES sys (.* )?lo( |$)/m.test(r.stdout)
# check: /^(IFACES ifnameindex lo|BLOCKED ifnameindex: .*)$/m.test(r.stdout)
import os, socket

sysnet = sorted(os.listdir("/sys/class/net"))
if sysnet != ["lo"]:
    print("INFO /sys/class/net lists interfaces of the box's network namespace:", " ".join(sysnet))
names = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:] if ":" in l]
print("IFACES proc", " ".join(sorted(names)))
print("IFACES sys", " ".join(sysnet))
try:
    print("IFACES ifnameindex", " ".join(sorted(n for _, n in socket.if_nameindex())))
except OSError as e:
    print("BLOCKED ifnameindex: %s" % e)
