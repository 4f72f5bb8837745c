# attack: a detached grandchild keeps using the proxy after the run ended (the run's feed and egressd's connections should die with it)
# expect: the child's requests reach the server while the run lives (control), none after the run's end
# network: web
# after: egress-settle
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 1
# check: /child=/.test(net.http)
# check: (() => { const end = Number((/^END (\S+)/m.exec(r.stdout) || [])[1]); return end > 0 && !net.http.split('\n').some((l) => l.includes('child=') && Number(l.split(' ')[0]) > end + 1.0); })()
import os, time, urllib.request

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for i in range(100):
            try:
                urllib.request.urlopen("http://allowed.test/small.txt?child=%d" % i, timeout=2).read()
            except Exception:
                pass
            time.sleep(0.1)
        os._exit(0)
    os._exit(0)
time.sleep(1.5)
print("BLOCKED (judged by the harness: no child request after END)")
print("END %.3f" % time.time(), flush=True)
