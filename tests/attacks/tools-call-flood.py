# attack: write 10,000 call frames on the run's tools connection without reading any answer for 3 s, then read
# expect: the gateway stays bounded (its buffers are capped: past 1 MiB of answers owed it stops reading; the case says whether the writer blocked) and answers every frame exactly once: at most MAX_CALLS (221) echo results, the rest "limit"; its RSS stays bounded and other runs' calls work (test-code-mode.sh)
# timeout: 60
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 1 && !/ESCAPED/.test(r.stdout)
import json, os, socket, threading, time

N = 10000
fd = int(os.environ["MCP_EXEC_TOOLS_FD"])
s = socket.socket(fileno=os.dup(fd))
frames = []
for i in range(1, N + 1):
    d = json.dumps({"id": i, "op": "call", "server": "everything", "tool": "echo",
                    "arguments": {"message": "flood-%d" % i}}).encode()
    frames.append(len(d).to_bytes(4, "big") + d)
blob = b"".join(frames)
done = threading.Event()


def writer():
    try:
        s.sendall(blob)
    except OSError as e:
        print("writer: %s" % e)
    done.set()


threading.Thread(target=writer, daemon=True).start()
time.sleep(3)
print("after 3 s without reading: the writer %s" % ("finished" if done.is_set() else "blocks (back-pressure)"))
s.settimeout(30)
buf, answers, kinds, ok, ids = b"", 0, {}, 0, set()
try:
    while answers < N:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 4 and len(buf) >= 4 + int.from_bytes(buf[:4], "big"):
            n = int.from_bytes(buf[:4], "big")
            a = json.loads(buf[4:4 + n])
            buf = buf[4 + n:]
            answers += 1
            ids.add(a.get("id"))
            if "result" in a:
                ok += 1
            else:
                k = a.get("error", {}).get("kind")
                kinds[k] = kinds.get(k, 0) + 1
except socket.timeout:
    pass
good = answers == N and len(ids) == N and ok <= 221 and kinds.get("limit", 0) >= N - 221
print(("BLOCKED" if good else "ESCAPED") + " flood: %d frames, %d answers (%d ids), %d results, errors %s"
      % (N, answers, len(ids), ok, kinds))
