# attack: bash with a network (issue 42): curl through the proxy the environment names (http_proxy) to an allowed name, then to a denied one, then around the proxy straight to an address with /dev/tcp
# expect: the allowed name is served (CONTROL 200); the denied one gets the proxy's 403 and its name is never resolved; the direct connection fails (no AF_INET but the proxy's loopback)
# network: web
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 2 && !/ESCAPED/.test(r.stdout)
# check: r.stdout.includes('CONTROL 200')
# check: !net.dns.includes('denied.test') && net.dns.includes('query allowed.test')
echo "CONTROL $(curl -s -o /dev/null -w '%{http_code}' -m 10 http://allowed.test/small.txt)"
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 http://denied.test/small.txt)
if [[ $code == 403 ]]; then echo "BLOCKED GET denied.test: $code"; else echo "ESCAPED GET denied.test: $code"; fi
if (exec 3<>/dev/tcp/192.0.2.1/80) 2>/dev/null; then echo "ESCAPED /dev/tcp 192.0.2.1"; else echo "BLOCKED /dev/tcp 192.0.2.1"; fi
