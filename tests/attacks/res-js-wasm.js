// attack: WebAssembly, compiled to native code by the JIT that JavaScript units are granted: run a module, then grow its memory towards 4 GiB, writing every page
// expect: the module runs (the grant works), the memory is stopped by the run's limit (256 MiB): oom_killed true, SIGKILL, not a timeout
// check: r.oom_killed === true && r.signal === 'SIGKILL' && r.timed_out === false
// check: r.stdout.includes('wasm add 42') && r.stdout.includes('HAVE 16 MiB') && !r.stdout.includes('ESCAPED')
// timeout: 60
// (module (memory (export "m") 1 65536) (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
const bytes = new Uint8Array([
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x07, 0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f,
        0x03, 0x02, 0x01, 0x00, 0x05, 0x06, 0x01, 0x01, 0x01, 0x80, 0x80, 0x04, 0x07, 0x0b, 0x02, 0x01, 0x6d,
        0x02, 0x00, 0x03, 0x61, 0x64, 0x64, 0x00, 0x00, 0x0a, 0x09, 0x01, 0x07, 0x00, 0x20, 0x00, 0x20, 0x01,
        0x6a, 0x0b,
]);
const inst = new WebAssembly.Instance(new WebAssembly.Module(bytes));
console.log('wasm add', inst.exports.add(40, 2));
const mem = inst.exports.m;
for (let mib = 16; mib <= 4000; mib += 16) {
        mem.grow(256);
        new Uint8Array(mem.buffer).fill(0x5a, (mib - 16) << 20);
        console.log(`HAVE ${mib} MiB`);
}
console.log('ESCAPED memory: 4 GiB of wasm memory');
