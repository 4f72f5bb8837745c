// attack: memory bomb from JavaScript: Buffer.alloc() 16 MiB at a time (zero-filled: every page written), kept, up to 2 GiB, outside V8's heap and its limit
// expect: the run is killed by the memory limit (256 MiB): oom_killed true, signal SIGKILL, exit -1, not a timeout; it never gets near 2 GiB
// check: r.oom_killed === true && r.signal === 'SIGKILL' && r.exit_code === -1 && r.timed_out === false
// check: r.stdout.includes('HAVE 16 MiB') && !r.stdout.includes('ESCAPED')
// timeout: 60
const kept = [];
while (kept.length * 16 < 2048) {
        kept.push(Buffer.alloc(16 << 20, 0x5a));
        console.log(`HAVE ${kept.length * 16} MiB`);
}
console.log(`ESCAPED memory: ${kept.length * 16} MiB`);
