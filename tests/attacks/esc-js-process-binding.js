// attack: get more than the program should from node's own powers: process.setuid(0)/setgid(0), spawnSync() as uid 0, process.binding('fs') to open /etc/shadow, the inspector (a debugger port on 127.0.0.1), process.binding('pipe_wrap') to the system bus, process.dlopen() of a file the run wrote
// expect: each fails: no capabilities (EPERM), no AF_INET for the inspector, an empty /run, a noexec or unloadable /tmp file; node's internals give nothing the sandbox does not
// check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 7
const fs = require('fs');
const { spawnSync } = require('child_process');

function attempt(what, f) {
        try {
                const r = f();
                console.log(`ESCAPED ${what}: ${r}`);
        } catch (e) {
                console.log(`BLOCKED ${what}: ${e.code || e.message}`);
        }
}

attempt('setuid(0)', () => { process.setuid(0); return process.getuid(); });
attempt('setgid(0)', () => { process.setgid(0); return process.getgid(); });
attempt('spawnSync as uid 0', () => {
        const r = spawnSync('id', ['-u'], { uid: 0, gid: 0, encoding: 'utf8' });
        if (r.error)
                throw r.error;
        return r.stdout;
});
attempt("process.binding('fs') open /etc/shadow", () => {
        process.emitWarning = () => {};
        const b = process.binding('fs');
        // Through the public API if the binding's signature is not this node's.
        return typeof b.open === 'function' ? fs.openSync('/etc/shadow', 'r') : fs.readFileSync('/etc/shadow');
});
attempt('inspector on 127.0.0.1:9229', () => {
        const inspector = require('inspector');
        inspector.open(9229, '127.0.0.1');
        const url = inspector.url();
        if (!url)
                throw new Error('no url');
        return url;
});
attempt("process.binding('pipe_wrap') to the system bus", () => {
        const fd = fs.openSync('/run/dbus/system_bus_socket', 'r');
        return fd;
});
attempt('process.dlopen() of a file in /tmp', () => {
        fs.writeFileSync('/tmp/x.node', fs.readFileSync('/usr/lib/x86_64-linux-gnu/libc.so.6'));
        const m = { exports: {} };
        process.dlopen(m, '/tmp/x.node');
        return Object.keys(m.exports).join(',');
});
