# attack: leave symbolic links in /tmp/outputs to /etc/shadow, to /proc/1/root/etc/shadow, to /etc/passwd (readable by the run) and to a path of another run's /tmp (/run/mcp-exec-tmp/ID/...), so that whoever collects the outputs reads them with more privilege than the run, or outside it
# expect: every link is skipped and listed with returned: false and a reason; nothing of /etc/shadow or /etc/passwd comes back; the one regular file next to them does
# check: r.exit_code === 0 && (r.stdout.match(/^MADE /gm) || []).length === 5
# check: r.files.filter(f => f.returned).length === 1 && r.files.find(f => f.returned).path === '/tmp/outputs/ok.txt'
# check: ['shadow', 'root1', 'passwd', 'otherrun'].every(n => r.files.some(f => f.path === '/tmp/outputs/' + n && !f.returned && f.reason))
# check: res.content.filter(c => c.type === 'resource').length === 1 && !JSON.stringify(res).includes('root:x:0:0')
import os

os.makedirs("/tmp/outputs")
for name, target in (("shadow", "/etc/shadow"), ("root1", "/proc/1/root/etc/shadow"), ("passwd", "/etc/passwd"),
                     ("otherrun", "/run/mcp-exec-tmp/" + "0" * 32 + "/outputs/secret.txt")):
    os.symlink(target, "/tmp/outputs/" + name)
    print("MADE", name, "->", target)
with open("/tmp/outputs/ok.txt", "w") as f:
    f.write("ok\n")
print("MADE ok.txt")
