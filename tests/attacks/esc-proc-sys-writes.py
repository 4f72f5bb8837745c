# attack: change the kernel through /proc and /sys (each write puts back the value already there, or a harmless one): kernel.hostname, kernel.core_pattern, kernel.modprobe, vm.drop_caches, /proc/sysrq-trigger (h), /sys/kernel/mm/transparent_hugepage/enabled, /sys/class/net/lo/mtu, /sys/kernel/uevent_helper, and lower our own oom_score_adj to -1000
# expect: all 9 fail (ProtectKernelTunables=yes: /proc/sys and /sys read-only; no CAP_SYS_RESOURCE)
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 9
import errno, os

def rewrite(path, value=None):
    try:
        if value is None:
            value = open(path).read()
            if path.endswith("/enabled"):  # "always [madvise] never" -> "madvise"
                value = value.split("[", 1)[1].split("]", 1)[0]
        with open(path, "w") as f:
            f.write(value)
        print("ESCAPED write %s: accepted %r" % (path, value.strip()[:40]))
    except OSError as e:
        print("BLOCKED write %s: %s" % (path, errno.errorcode.get(e.errno, e.errno)))

rewrite("/proc/sys/kernel/hostname")
rewrite("/proc/sys/kernel/core_pattern")
rewrite("/proc/sys/kernel/modprobe")
rewrite("/proc/sys/vm/drop_caches", "1")
rewrite("/proc/sysrq-trigger", "h")
rewrite("/sys/kernel/mm/transparent_hugepage/enabled")
rewrite("/sys/class/net/lo/mtu")
rewrite("/sys/kernel/uevent_helper")
rewrite("/proc/self/oom_score_adj", "-1000")
