// attack: JavaScript with a network (issue 42): fetch(), http.get and https through the proxy the environment names (the bootstrap's mcp-exec-proxy.js), to allowed names; fetch() and http.get to a denied name; then around the proxy with net.connect straight to the server's address
// expect: the allowed names are served (CONTROL lines; https through CONNECT with the SNI of its name, and fetch() still verifies the certificate: the test CA is not trusted here); the denied name gets the proxy's 403 and is never resolved; the direct connection fails (no AF_INET but the proxy's loopback)
// network: web
// check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 3 && !/ESCAPED/.test(r.stdout)
// check: r.stdout.includes('CONTROL fetch 200 hello from allowed.test') && r.stdout.includes('CONTROL http.get 200')
// check: r.stdout.includes('CONTROL https tls.test 200') && r.stdout.includes('CONTROL fetch https: certificate')
// check: !net.dns.includes('denied.test') && net.dns.includes('query allowed.test') && net.http.includes('sni tls.test')
const http = require('http');
const https = require('https');
const net = require('net');

function get(mod, url, options = {}) {
        return new Promise((resolve) => {
                const req = mod.get(url, { timeout: 10000, ...options }, (res) => {
                        let body = '';
                        res.on('data', (d) => body += d);
                        res.on('end', () => resolve(`${res.statusCode} ${body.trim().slice(0, 40)}`));
                });
                req.on('error', (e) => resolve(`error ${e.code || e.message}`));
                req.on('timeout', () => req.destroy(new Error('timeout')));
        });
}

(async () => {
        const r = await fetch('http://allowed.test/small.txt');
        console.log(`CONTROL fetch ${r.status} ${(await r.text()).trim()}`);
        console.log(`CONTROL http.get ${await get(http, 'http://allowed.test/small.txt')}`);
        // The test CA is not node's: the tunnel is the point here, as in egr-sni.
        console.log(`CONTROL https tls.test ${await get(https, 'https://tls.test/small.txt', { rejectUnauthorized: false })}`);
        try {
                await fetch('https://tls.test/small.txt');
                console.log('CONTROL fetch https: served without the test CA?');
        } catch (e) {
                const code = String((e.cause && (e.cause.code || e.cause.message)) || e.message);
                console.log(`CONTROL fetch https: ${/CERT|SIGNATURE|ISSUER/i.test(code) ? 'certificate' : 'other'} ${code}`);
        }

        const d = await fetch('http://denied.test/small.txt').then((x) => x.status, (e) => `error ${e.message}`);
        console.log(`${d === 403 ? 'BLOCKED' : 'ESCAPED'} fetch denied.test: ${d}`);
        const g = await get(http, 'http://denied.test/small.txt');
        console.log(`${g.startsWith('403') ? 'BLOCKED' : 'ESCAPED'} http.get denied.test: ${g}`);
        const direct = await new Promise((resolve) => {
                const s = net.connect({ host: '192.0.2.10', port: 80, timeout: 5000 });
                s.on('connect', () => { s.destroy(); resolve('connected'); });
                s.on('error', (e) => resolve(e.code || e.message));
                s.on('timeout', () => { s.destroy(); resolve('timeout'); });
        });
        console.log(`${direct === 'connected' ? 'ESCAPED' : 'BLOCKED'} net.connect 192.0.2.10:80: ${direct}`);
})();
