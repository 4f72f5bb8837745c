# attack: files whose names say image but whose bytes are not (a shell script named .png, a PNG named .jpg, HTML named .gif), to smuggle other content into image blocks
# expect: none becomes an image block: each is listed in images with returned: false and a reason; an SVG comes back as text (image/svg+xml), not as an image block
# check: r.exit_code === 0 && r.stdout === 'MADE 4\n'
# check: ['x.png', 'y.jpg', 'z.gif'].every(n => r.images.some(i => i.path === '/tmp/outputs/' + n && !i.returned && i.reason))
# check: res.content.every(c => c.type !== 'image')
# check: res.content.some(c => c.type === 'resource' && c.resource.mimeType === 'image/svg+xml' && c.resource.text.startsWith('<svg'))
import base64, os

os.makedirs("/tmp/outputs")
open("/tmp/outputs/x.png", "wb").write(b"#!/bin/sh\necho hi\n")
png = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAFUlEQVR4nGM8IafBwcDAwDATE9jYAQAT2AESWOyqfwAAAABJRU5ErkJggg==")
open("/tmp/outputs/y.jpg", "wb").write(png)
open("/tmp/outputs/z.gif", "wb").write(b"<html><script>alert(1)</script></html>")
open("/tmp/outputs/ok.svg", "w").write('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>')
print("MADE 4")
