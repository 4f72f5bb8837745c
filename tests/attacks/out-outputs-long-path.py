# attack: three nested directories under /tmp/outputs named with 255 control bytes each and a file inside (its path is 4.5 KiB as JSON, past a result frame's 4 KiB of metadata), beside ordinary files that the walk reaches after it, to make the launcher drop the rest of its report
# expect: the ordinary files come back; the deep one is left out and said so (its path is too long); the report is complete: exit 0, no note that the launcher did not finish its report
# check: r.exit_code === 0 && r.timed_out === false && r.stdout === 'MADE\n'
# check: r.files.filter(f => f.returned).map(f => f.path).sort().join() === '/tmp/outputs/a.txt,/tmp/outputs/z.txt'
# check: res.content.some(c => c.type === 'text' && /left out/.test(c.text) && /too long/.test(c.text))
# check: !res.content.some(c => c.type === 'text' && /without finishing its report/.test(c.text))
import os

d = "/tmp/outputs/" + "/".join(chr(c) * 255 for c in (1, 2, 3))
os.makedirs(d)
with open(d + "/deep.txt", "w") as f:
    f.write("deep")
for name in ("a.txt", "z.txt"):
    with open("/tmp/outputs/" + name, "w") as f:
        f.write(name[0])
print("MADE")
