# attack: a small, well-formed PNG (signature, IHDR, IDAT, IEND, correct CRCs) whose header claims 100000x100000 pixels (30 GB decoded): a decompression bomb for any client that shows it
# expect: the image is listed with returned: false and a reason; no image block goes out
# check: r.exit_code === 0 && /^MADE \d+ bytes$/m.test(r.stdout)
# check: r.images.some(i => i.path === '/tmp/outputs/bomb.png' && !i.returned && i.reason) && res.content.every(c => c.type !== 'image')
import os, struct, zlib

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)) +
       chunk(b"IDAT", zlib.compress(b"\0" * 300001, 9)) + chunk(b"IEND", b""))
os.makedirs("/tmp/outputs")
open("/tmp/outputs/bomb.png", "wb").write(png)
print("MADE %d bytes" % len(png))
