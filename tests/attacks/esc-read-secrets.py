# attack: read what belongs to root and to users: /etc/shadow, /etc/gshadow, the ssh host keys, /root, /home/*, the journal files (/var/log/journal, /run/log/journal), /var/log/auth.log, /run/mcp-exec, /var/lib/private (other runs' StateDirectory), /var/lib/systemd, /proc/kcore, /proc/kallsyms addresses
# expect: every read fails (file modes, ProtectHome=yes, the empty /run, ProtectKernelLogs), /home lists nothing, kallsyms shows no real addresses
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 14
import errno, glob, os

def attempt(what, fn):
    try:
        v = fn()
    except OSError as e:
        print("BLOCKED %s: %s" % (what, errno.errorcode.get(e.errno, e.errno)))
        return
    print("ESCAPED %s: got %d items/bytes" % (what, len(v)))

attempt("read /etc/shadow", lambda: open("/etc/shadow", "rb").read())
attempt("read /etc/gshadow", lambda: open("/etc/gshadow", "rb").read())
def host_keys():
    keys = glob.glob("/etc/ssh/ssh_host_*_key")
    if not keys:
        raise OSError(errno.ENOENT, "no host keys here")
    return b"".join(open(k, "rb").read() for k in keys)
attempt("read the ssh host keys", host_keys)
attempt("list /root", lambda: os.listdir("/root"))
def homes():
    names = os.listdir("/home")
    if not names:
        raise OSError(errno.ENOENT, "empty")
    return names
attempt("list /home", homes)
def journals():
    files = glob.glob("/var/log/journal/*/*.journal") + glob.glob("/run/log/journal/*/*.journal")
    if not files:
        raise OSError(errno.ENOENT, "no journal files")
    return b"".join(open(f, "rb").read(4096) for f in files)
attempt("read the journal files", journals)
attempt("read /var/log/auth.log", lambda: open("/var/log/auth.log", "rb").read())
attempt("list /run/mcp-exec", lambda: os.listdir("/run/mcp-exec"))
attempt("list /var/lib/private", lambda: os.listdir("/var/lib/private"))
attempt("list /var/lib/systemd/credential.secret", lambda: open("/var/lib/systemd/credential.secret", "rb").read())
attempt("read /proc/kcore", lambda: open("/proc/kcore", "rb").read(4096))
attempt("read /proc/kmsg", lambda: open("/proc/kmsg", "rb").read(1))
attempt("list /run/credentials", lambda: os.listdir("/run/credentials"))
def kallsyms():
    lines = open("/proc/kallsyms").read().splitlines()
    real = [l for l in lines if not l.startswith("0000000000000000")]
    if not real:
        raise OSError(errno.EPERM, "%d symbols, all addresses zeroed" % len(lines))
    return real
attempt("kernel addresses in /proc/kallsyms", kallsyms)
