// attack: fork bomb through child_process: spawn() sleeping children as fast as it can until spawning fails
// expect: spawn fails with EAGAIN once the run holds TasksMax (128) tasks; the program sees it and exits 0; nothing of it is left
// check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 1
// check: +(r.stdout.match(/pids\.max=(\d+)/) || [])[1] === 128 && +(r.stdout.match(/pids\.current=(\d+)/) || [])[1] <= 128
// timeout: 30
const { spawn } = require('child_process');
const fs = require('fs');

function cgroupFile(name) {
        const cg = fs.readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n').pop().split(':')[2];
        for (const p of [`/sys/fs/cgroup${cg}/${name}`, `/sys/fs/cgroup/pids${cg}/${name}`])
                try {
                        return fs.readFileSync(p, 'utf8').trim();
                } catch {
                        // the other hierarchy
                }
        return 'unknown';
}

let started = 0, done = false;
function one() {
        if (done)
                return;
        const c = spawn('sleep', ['60'], { stdio: 'ignore' });
        c.on('spawn', () => {
                started++;
                if (started > 10000) {
                        done = true;
                        console.log(`ESCAPED ${started} children`);
                        process.exit(0);
                }
                setImmediate(one);
        });
        c.on('error', (e) => {
                if (done)
                        return;
                done = true;
                console.log(`BLOCKED spawn after ${started} children: ${e.code}`);
                console.log(`pids.max=${cgroupFile('pids.max')} pids.current=${cgroupFile('pids.current')}`);
                process.exit(0);
        });
}
one();
