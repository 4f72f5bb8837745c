// attack: read other processes through /proc from JavaScript: list every pid and its owner, read PID 1's and the daemons' environ and cmdline (the front end's token lives in its memory)
// expect: /proc lists no process of another uid (ProtectProc=invisible, a uid per run; from systemd 257 a PID namespace of the run's own); PID 1's environ and the daemons' entries cannot be read
// check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 5
const fs = require('fs');

const me = process.getuid();
let others = 0, n = 0;
for (const e of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(e))
                continue;
        n++;
        try {
                if (fs.statSync(`/proc/${e}`).uid !== me)
                        others++;
        } catch {
                // gone meanwhile
        }
}
console.log(others === 0 ? `BLOCKED /proc: ${n} pids, none of another uid` : `ESCAPED /proc lists ${others} of other uids`);
const targets = [['PID 1 environ', '/proc/1/environ'],
                 ['front end environ', '/proc/@FRONTEND_PID@/environ'],
                 ['front end cmdline', '/proc/@FRONTEND_PID@/cmdline'],
                 ['broker environ', '/proc/@BROKER_PID@/environ']];
for (const [what, p] of targets) {
        try {
                const data = fs.readFileSync(p);
                // PID 1 may be our own launcher (systemd >= 257), which is not dumpable: empty at most.
                console.log(data.length === 0 ? `BLOCKED ${what}: empty` : `ESCAPED ${what}: ${data.length} bytes`);
        } catch (e) {
                console.log(`BLOCKED ${what}: ${e.code}`);
        }
}
