# attack: a flood of 1,000 matplotlib figures: 500 passed to plt.show() one by one and 500 left open at the end, so that capturing them takes the whole run, or the frames or the reply grow with them
# expect: MCP_EXEC_MAX_IMAGES (8) come back as image blocks; the rest is left out and said so; the call ends within its timeout
# timeout: 60
# check: !r.timed_out && r.exit_code === 0 && r.stdout === 'MADE 1000\n'
# check: res.content.filter(c => c.type === 'image').length === 8 && r.images.filter(i => i.returned).length === 8
# check: res.content.some(c => c.type === 'text' && /left out/.test(c.text)) && JSON.stringify(r).length < 100000
import matplotlib.pyplot as plt

plt.rcParams["figure.max_open_warning"] = 0
for i in range(500):
    plt.figure(figsize=(1, 1))
    plt.show()
for i in range(500):
    plt.figure(figsize=(1, 1))
print("MADE 1000")
