# attack: leave 10,000 tiny files in /tmp/outputs, so that collection, the frames or the reply grow with them
# expect: MCP_EXEC_MAX_FILES_OUT (16) come back as resources; the rest is left out and said so, with a short listing; the reply stays small
# timeout: 30
# check: r.exit_code === 0 && r.stdout === 'MADE 10000\n'
# check: res.content.filter(c => c.type === 'resource').length === 16 && r.files.filter(f => f.returned).length === 16
# check: res.content.some(c => c.type === 'text' && /left out/.test(c.text)) && JSON.stringify(res).length < 100000
import os

os.makedirs("/tmp/outputs")
for i in range(10000):
    with open("/tmp/outputs/f%05d.txt" % i, "w") as f:
        f.write("%d\n" % i)
print("MADE 10000")
