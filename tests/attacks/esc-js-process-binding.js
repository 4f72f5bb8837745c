// attack: get more than the program should from node's own powers: process.setuid(0)/setgid(0), spawnSync() as uid 0, /etc/shadow read with process.binding('fs') at hand, the inspector (a debugger port on 127.0.0.1), the system bus's socket
// expect: each fails: no capabilities (EPERM), the dynamic uid (EACCES), no AF_INET for the inspector, an empty /run; node's internals give nothing the sandbox does not (loading native code is no escape: any run can, docs/architecture.md "W^X")
// check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 6
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
attempt('/etc/shadow', () => {
        process.emitWarning = () => {};
        // The binding fs uses: its open() is the same system call, as the same uid.
        if (typeof process.binding('fs').open !== 'function')
                throw new Error('no binding');
        return fs.readFileSync('/etc/shadow').length;
});
attempt('inspector on 127.0.0.1:9229', () => {
        const inspector = require('inspector');
        inspector.open(9229, '127.0.0.1');
        const url = inspector.url();
        if (!url)
                throw new Error('no url');
        return url;
});
attempt('the system bus socket', () => fs.statSync('/run/dbus/system_bus_socket').mode);
