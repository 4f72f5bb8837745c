# attack: reach raw devices: open /dev/mem, /dev/kmem, /dev/port, /dev/sda, /dev/vda, /dev/nvme0n1, /dev/kmsg, /dev/console, /dev/tty0 for writing; mknod a /dev/mem and a disk node in /tmp and in /dev/shm; write to /dev/null (control, must work)
# expect: the control write to /dev/null works; the 9 device opens and 4 mknods fail (PrivateDevices=yes: no such nodes, mknod filtered, nodev mounts)
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 13 && r.stdout.includes('CONTROL /dev/null: wrote 5 bytes')
import errno, os, stat

fd = os.open("/dev/null", os.O_WRONLY)
print("CONTROL /dev/null: wrote %d bytes" % os.write(fd, b"hello"))
os.close(fd)
print("INFO /dev holds: %s" % sorted(os.listdir("/dev")))
for p in ("/dev/mem", "/dev/kmem", "/dev/port", "/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/kmsg", "/dev/console", "/dev/tty0"):
    try:
        fd = os.open(p, os.O_RDWR)
        os.close(fd)
        print("ESCAPED open %s read-write" % p)
    except OSError as e:
        print("BLOCKED open %s: %s" % (p, errno.errorcode.get(e.errno, e.errno)))
for d in ("/tmp", "/dev/shm"):
    for name, mode, dev in (("mem", stat.S_IFCHR, os.makedev(1, 1)), ("sda", stat.S_IFBLK, os.makedev(8, 0))):
        p = "%s/%s" % (d, name)
        try:
            os.mknod(p, mode | 0o666, dev)
            try:
                fd = os.open(p, os.O_RDONLY)
                os.close(fd)
                print("ESCAPED mknod %s and open it" % p)
            except OSError as e:
                print("BLOCKED open of mknod'ed %s: %s" % (p, errno.errorcode.get(e.errno, e.errno)))
        except OSError as e:
            print("BLOCKED mknod %s: %s" % (p, errno.errorcode.get(e.errno, e.errno)))
