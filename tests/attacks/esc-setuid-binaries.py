# attack: use the system's setuid-root binaries (su, sudo, passwd, mount, umount, chsh, chfn, gpasswd, chage, newgrp, unix_chkpwd) for something only root may do; watch each one's effective uid in /proc while it runs; make our own file setuid
# expect: no privilege gained (NoNewPrivileges=yes): every binary present runs with our uid or does not run, none succeeds; chmod u+s fails (RestrictSUIDSGID=yes); at least 8 binaries were present to try
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED')
# check: (r.stdout.match(/^BLOCKED /gm) || []).length === (r.stdout.match(/^TRIED /gm) || []).length + 1 && (r.stdout.match(/^TRIED /gm) || []).length >= 8
# timeout: 60
import errno, os, stat, subprocess, time

me = os.getuid()
os.makedirs("/tmp/mnt", exist_ok=True)
cases = [
    (["/usr/bin/su", "root", "-c", "id -u"], lambda p, out: out.strip() == "0"),
    (["/usr/bin/sudo", "-n", "id", "-u"], lambda p, out: out.strip() == "0"),
    (["/usr/bin/passwd", "-d", "root"], lambda p, out: p.returncode == 0),
    (["/usr/bin/mount", "-t", "tmpfs", "none", "/tmp/mnt"], lambda p, out: p.returncode == 0 or os.path.ismount("/tmp/mnt")),
    (["/usr/bin/umount", "-l", "/proc"], lambda p, out: p.returncode == 0),
    (["/usr/bin/chsh", "-s", "/bin/sh", "root"], lambda p, out: p.returncode == 0),
    (["/usr/bin/chfn", "-f", "x", "root"], lambda p, out: p.returncode == 0),
    (["/usr/bin/gpasswd", "-a", "nobody", "root"], lambda p, out: p.returncode == 0),
    (["/usr/bin/chage", "-l", "root"], lambda p, out: p.returncode == 0),
    (["/usr/bin/newgrp", "root"], lambda p, out: "uid=0" in out or "gid=0" in out),
    (["/usr/sbin/unix_chkpwd", "root", "nullok"], lambda p, out: p.returncode == 0),
]
for argv, succeeded in cases:
    path = argv[0]
    try:
        st = os.stat(path)
    except OSError:
        print("INFO %s: not installed" % path)
        continue
    if not st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        print("INFO %s: not setuid/setgid here" % path)
        continue
    print("TRIED %s" % " ".join(argv))
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    # While it runs (or as a zombie) its status shows the effective uid it got.
    try:
        euid = int(open("/proc/%d/status" % p.pid).read().split("\nUid:\t", 1)[1].split()[1])
    except (OSError, IndexError):
        euid = None
    try:
        out, err = p.communicate("password\nid\nexit\n", timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    why = (err.strip().splitlines() or ["(no message)"])[-1][:100]
    if euid is None:
        # Invisible while it existed: it ran under another uid.
        print("ESCAPED %s: its /proc entry was hidden from us (another uid?); exit %s: %s" % (path, p.returncode, why))
    elif euid != me or succeeded(p, out):
        print("ESCAPED %s: euid %d, exit %s, out %r: %s" % (path, euid, p.returncode, out[:60], why))
    else:
        print("BLOCKED %s: euid stayed %d, exit %s: %s" % (path, euid, p.returncode, why))

open("/tmp/suid", "w").close()
try:
    os.chmod("/tmp/suid", 0o4755)
    print("ESCAPED chmod u+s /tmp/suid: mode %o" % os.stat("/tmp/suid").st_mode)
except OSError as e:
    print("BLOCKED chmod u+s /tmp/suid: %s" % errno.errorcode.get(e.errno, e.errno))
