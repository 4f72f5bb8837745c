# attack: allowed names that resolve to loopback, the metadata address, RFC 1918, and one that resolves to a public and a loopback address (rebinding, SSRF)
# expect: each 403 non-public; no server logs a request; the result counts 4 non-public
# network: web
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 4 && !/ESCAPED/.test(r.stdout)
# check: r.egress && r.egress.connections['non-public'] === 4
# check: !/ GET /.test(net.http) && net.dns.includes('query mixed.test')
import urllib.request, urllib.error

for n in ("loop", "meta", "priv", "mixed"):
    try:
        b = urllib.request.urlopen("http://%s.test/small.txt" % n, timeout=10).read()
        print("ESCAPED %s.test: %r" % (n, b[:40]))
    except urllib.error.HTTPError as e:
        print(("BLOCKED" if e.code == 403 else "ESCAPED") + " %s.test: %d %s" % (n, e.code, e.read()[:80]))
    except OSError as e:
        print("ESCAPED %s.test: not a 403 but %s" % (n, e))
