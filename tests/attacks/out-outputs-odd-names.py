# attack: output files whose names hold a newline, a terminal escape, bytes that are not UTF-8, quotes, backslashes, a tab, '%', '?' and '#', to break the reply's JSON, the resource URIs or a terminal that shows them
# expect: every file comes back with a valid file: URI (percent-encoded: no raw control bytes, spaces, '?' or '#') and its exact content, or, for the name that is not UTF-8, is left out and said so; the names in structuredContent are valid strings
# check: r.exit_code === 0 && r.stdout === 'MADE 7\n'
# check: res.content.filter(c => c.type === 'resource').length >= 6 && r.files.every(f => f.returned)
# check: res.content.filter(c => c.type === 'resource').every(c => /^file:\/\/\/tmp\/outputs\/[A-Za-z0-9%._~\/-]+$/.test(c.resource.uri) && new URL(c.resource.uri).protocol === 'file:' && c.resource.text === 'x')
# check: r.files.some(f => f.path === '/tmp/outputs/a\nb.txt') && r.files.some(f => f.path === '/tmp/outputs/\u001b[31mred.txt') && r.files.some(f => f.path === '/tmp/outputs/50%?#frag.txt')
# check: res.content.some(c => c.type === 'resource' && c.resource.uri === 'file:///tmp/outputs/%FF%FE.txt') || res.content.some(c => c.type === 'text' && /left out/.test(c.text) && /UTF-8/.test(c.text))
import os

os.makedirs("/tmp/outputs")
names = [b"a\nb.txt", b"\x1b[31mred.txt", b"\xff\xfe.txt", b'q"uo\\te.txt', b"tab\t.txt", b"50%?#frag.txt",
         "ü ñ.txt".encode()]
for n in names:
    with open(b"/tmp/outputs/" + n, "wb") as f:
        f.write(b"x")
print("MADE %d" % len(names))
