// attack: reach the network from JavaScript: net.connect() to a test host (IPv4 and IPv6) and to the box's loopback, a UDP datagram, fetch(), dns.lookup() (getaddrinfo) and dns.resolve4() (c-ares, its own UDP socket), the box's abstract unix socket
// expect: every attempt fails (PrivateNetwork: only the run's own lo; RestrictAddressFamilies=AF_UNIX: no AF_INET/AF_INET6 sockets at all; its own abstract namespace), no listener logs anything
// needs: testhost hostlisten
// after: listeners-silent
// check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 9
const net = require('net');
const dgram = require('dgram');
const dns = require('dns');

function attempt(what, start) {
        return new Promise((resolve) => {
                const timer = setTimeout(() => {
                        console.log(`BLOCKED ${what}: no answer in 3 s`);
                        resolve();
                }, 3000);
                start((err) => {
                        clearTimeout(timer);
                        console.log(err ? `BLOCKED ${what}: ${err.code || err.cause?.code || err.message}` :
                                    `ESCAPED ${what}`);
                        resolve();
                });
        });
}

function connect(host, port, path) {
        return (done) => {
                const s = net.connect(path ? { path } : { host, port });
                s.on('connect', () => { s.destroy(); done(null); });
                s.on('error', done);
        };
}

(async () => {
        await attempt('tcp @TESTHOST4@', connect('@TESTHOST4@', @TESTPORT@));
        await attempt('tcp @TESTHOST6@', connect('@TESTHOST6@', @TESTPORT@));
        await attempt('tcp box 127.0.0.1', connect('127.0.0.1', @HOSTPORT@));
        await attempt('tcp box ::1', connect('::1', @HOSTPORT@));
        await attempt('abstract @ABSTRACT@', connect(null, null, '\0@ABSTRACT@'));
        await attempt('udp @TESTHOST4@', (done) => {
                let s;
                try {
                        s = dgram.createSocket('udp4');
                } catch (e) {
                        return done(e);
                }
                s.on('error', (e) => { s.close(); done(e); });
                s.send('mcpatk', @TESTPORT@, '@TESTHOST4@', (e) => { s.close(); done(e); });
        });
        await attempt('fetch http://@TESTHOST4@', (done) => {
                fetch('http://@TESTHOST4@:@TESTPORT@/', { signal: AbortSignal.timeout(2500) })
                        .then(() => done(null), (e) => done(e));
        });
        await attempt('dns.lookup example.com', (done) => dns.lookup('example.com', (e) => done(e)));
        await attempt('dns.resolve4 example.com', (done) => dns.resolve4('example.com', (e) => done(e)));
})();
