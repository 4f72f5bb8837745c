# attack: reach the network from bash: /dev/tcp and /dev/udp to a test host (IPv4 and IPv6) and to the box's loopback, getent (getaddrinfo), curl where installed
# expect: every attempt fails (PrivateNetwork: only the run's own lo; RestrictAddressFamilies=AF_UNIX: no AF_INET/AF_INET6 sockets at all), no listener logs anything
# needs: testhost, hostlisten
# after: listeners-silent
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 6
for t in tcp/@TESTHOST4@/@TESTPORT@ tcp/@TESTHOST6@/@TESTPORT@ tcp/127.0.0.1/@HOSTPORT@ udp/@TESTHOST4@/@TESTPORT@; do
        if (exec 3<>"/dev/$t" && echo mcpcanarynet >&3) 2>/dev/null; then echo "ESCAPED $t"; else echo "BLOCKED $t"; fi
done
if getent hosts example.com >/dev/null 2>&1; then echo "ESCAPED getent"; else echo "BLOCKED getent"; fi
if command -v curl >/dev/null && curl -s -m 3 "http://@TESTHOST4@:@TESTPORT@/" >/dev/null 2>&1; then
        echo "ESCAPED curl"
else
        echo "BLOCKED curl"
fi
