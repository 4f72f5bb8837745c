# attack: a detached grandchild keeps the run's tools connection and calls tool "after-end-probe" every 50 ms (ids from 1000) after the run's main process exited
# expect: its calls reach the gateway while the run lives (control); the run ends when its main process exits; the grandchild is killed with the unit, and no call of it reaches the gateway after END (test-code-mode.sh reads the gateway's journal; tools-end-2-later sees none of its answers)
# timeout: 30
# check: r && r.exit_code === 0 && r.timed_out === false && (r.stdout.match(/^BLOCKED /mg) || []).length === 1
# check: /^END \d+\.\d+$/m.test(r.stdout)
import json, os, socket, time

fd = int(os.environ["MCP_EXEC_TOOLS_FD"])
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.close(r)
        s = socket.socket(fileno=fd)
        s.setblocking(False)
        for i in range(1000, 1600):
            d = json.dumps({"id": i, "op": "call", "server": "everything", "tool": "after-end-probe",
                            "arguments": {}}).encode()
            try:
                s.send(len(d).to_bytes(4, "big") + d)
                s.recv(65536)
            except OSError:
                pass
            if i == 1003:
                os.write(w, b"started")
                os.close(w)
            time.sleep(0.05)
        os._exit(0)
    os._exit(0)
os.close(w)
os.read(r, 16)
time.sleep(0.3)
print("BLOCKED (judged by test-code-mode.sh: no after-end-probe call journaled after END)")
print("END %.3f" % time.time(), flush=True)
