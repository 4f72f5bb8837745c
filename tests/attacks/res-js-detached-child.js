// attack: leave processes behind from JavaScript: child_process.spawn() of a detached child (its own session) ignoring SIGTERM and SIGHUP, unref()ed, one through setsid and nohup, one a node child that spawns a grandchild and exits; the program exits at once
// expect: the run ends normally (exit 0, no timeout) and every one of them dies with the run's cgroup (the harness finds no process of a dynamic uid, the next run sees none)
// check: r.exit_code === 0 && r.timed_out === false && (r.stdout.match(/^DAEMON /gm) || []).length === 3
const { spawn, spawnSync } = require('child_process');

const loop = 'trap "" TERM HUP INT; while :; do sleep 1; done';
const a = spawn('/bin/sh', ['-c', loop], { detached: true, stdio: 'ignore' });
a.unref();
console.log('DAEMON detached sh', a.pid);
const b = spawn('setsid', ['nohup', '/bin/sh', '-c', loop], { detached: true, stdio: 'ignore' });
b.unref();
console.log('DAEMON setsid nohup', b.pid);
// A node child that starts a grandchild of its own and leaves at once.
const c = spawnSync(process.execPath, ['-e',
        `const p = require('child_process').spawn('/bin/sh', ['-c', ${JSON.stringify(loop)}],
         { detached: true, stdio: 'ignore' }); p.unref(); console.log(p.pid)`], { encoding: 'utf8' });
console.log('DAEMON grandchild', c.stdout.trim(), c.status);
