# attack: make /tmp/outputs itself a symbolic link to /etc, so that collecting "the files under /tmp/outputs" reads /etc
# expect: nothing comes back (no resource, no image): the directory is a link, not a directory of outputs; the note or an entry says so
# check: r.exit_code === 0 && r.stdout === 'MADE /tmp/outputs -> /etc\n'
# check: res.content.every(c => c.type === 'text') && r.files.every(f => !f.returned) && r.images.length === 0
# check: !JSON.stringify(res).includes('root:x:0:0')
import os

os.symlink("/etc", "/tmp/outputs")
print("MADE /tmp/outputs -> /etc")
