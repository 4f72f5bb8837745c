// attack: write outside the run's own /tmp from JavaScript (fs.writeFileSync, fs.mkdirSync): the system (/etc, /usr, /opt, /srv), /var (lib, cache, log, our cache), the homes, /run, the script's own directory
// expect: every write fails (ProtectSystem=strict, ProtectHome=yes, a read-only /run, the dynamic uid); writing /tmp works
// check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 12 && r.stdout.includes('OK /tmp')
const fs = require('fs');
const path = require('path');

const dirs = ['/etc', '/usr', '/usr/local/bin', '/opt', '/srv', '/var/lib', '/var/cache/mcp-exec', '/var/log',
              '/home', '/root', '/run', path.dirname(process.argv[0])];
for (const d of dirs) {
        const p = path.join(d, `mcpatk-${process.pid}`);
        try {
                fs.writeFileSync(p, 'x');
                fs.unlinkSync(p);
                console.log(`ESCAPED wrote ${p}`);
        } catch (e) {
                try {
                        fs.mkdirSync(p);
                        fs.rmdirSync(p);
                        console.log(`ESCAPED made directory ${p}`);
                } catch (e2) {
                        console.log(`BLOCKED ${d}: ${e.code}, mkdir ${e2.code}`);
                }
        }
}
fs.writeFileSync('/tmp/mine', 'y');
console.log(fs.readFileSync('/tmp/mine', 'utf8') === 'y' ? 'OK /tmp' : 'WRONG /tmp');
