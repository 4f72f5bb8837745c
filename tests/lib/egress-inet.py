#!/usr/bin/env python3
# tests/lib/egress-inet.py - the test "internet" of the egress tests (tests/lib/egress-net.sh):
# runs in a network namespace of its own, joined to the box by a veth pair. Serves
#   DNS    192.0.2.53:53 UDP and TCP, A records from the table below, every query logged
#   HTTP   192.0.2.10:80 from DIR/www (GET; /slow/N sends N KiB slowly; POST echoes the length)
#   HTTPS  192.0.2.11:443, certificate DIR/tls.pem + DIR/tls.key (tls.test, other.test)
# Logs one line per query or connection to DIR/dns.log and DIR/http.log, "ready" once bound.
#
#   egress-inet.py DIR
import os, socket, socketserver, ssl, struct, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = sys.argv[1]
A = {
    "allowed.test": ["192.0.2.10"],
    "tls.test": ["192.0.2.11"],
    "other.test": ["192.0.2.11"],
    "loop.test": ["127.0.0.1"],
    "meta.test": ["169.254.169.254"],
    "priv.test": ["10.0.0.1"],
    "mixed.test": ["192.0.2.10", "127.0.0.1"],
    "denied.test": ["192.0.2.10"],   # never to be asked: not in the policy
}
lock = threading.Lock()
dnslog = open(os.path.join(DIR, "dns.log"), "a", buffering=1)
httplog = open(os.path.join(DIR, "http.log"), "a", buffering=1)


def note(f, s):
    with lock:
        f.write("%.3f %s\n" % (time.time(), s))


def dns_answer(q):
    """The answer to the DNS message q (bytes), or None."""
    if len(q) < 12:
        return None
    qid, flags, qd = struct.unpack("!HHH", q[:6])
    if qd != 1:
        return None
    i, labels = 12, []
    while i < len(q) and q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
        i += 1 + q[i]
    i += 1
    if i + 4 > len(q):
        return None
    qtype, qclass = struct.unpack("!HH", q[i:i + 4])
    question = q[12:i + 4]
    name = ".".join(labels).lower()
    note(dnslog, "query %s type %d" % (name, qtype))
    addrs = A.get(name)
    rcode = 0 if addrs is not None else 3
    answers = b""
    n = 0
    if addrs and qtype == 1:
        for a in addrs:
            answers += b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(a)
            n += 1
    hdr = struct.pack("!HHHHHH", qid, 0x8180 | rcode | (flags & 0x0100), 1, n, 0, 0)
    return hdr + question + answers


def dns_udp(s):
    while True:
        q, peer = s.recvfrom(4096)
        note(dnslog, "udp from %s:%d" % peer)
        a = dns_answer(q)
        if a:
            s.sendto(a, peer)


class DnsTcp(socketserver.BaseRequestHandler):
    def handle(self):
        note(dnslog, "tcp from %s:%d" % self.client_address)
        self.request.settimeout(5)
        try:
            while True:
                h = self.request.recv(2)
                if len(h) < 2:
                    return
                (n,) = struct.unpack("!H", h)
                q = b""
                while len(q) < n:
                    c = self.request.recv(n - len(q))
                    if not c:
                        return
                    q += c
                a = dns_answer(q)
                if a:
                    self.request.sendall(struct.pack("!H", len(a)) + a)
        except OSError:
            pass


class Tcp(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


class Web(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def setup(self):
        super().setup()
        note(httplog, "%s connection from %s:%d" % (self.server.tag, *self.client_address[:2]))

    def finish(self):
        try:
            super().finish()
        finally:
            note(httplog, "%s closed %s:%d" % (self.server.tag, *self.client_address[:2]))

    def do_GET(self):
        note(httplog, "%s GET %s Host=%s" % (self.server.tag, self.path, self.headers.get("Host")))
        p = self.path.split("?")[0]
        if p.startswith("/slow/"):
            n = int(p[6:])
            self.send_response(200)
            self.send_header("Content-Length", str(n * 1024))
            self.end_headers()
            try:
                for _ in range(n):
                    self.wfile.write(b"s" * 1024)
                    self.wfile.flush()
                    time.sleep(0.1)
                note(httplog, "%s slow done" % self.server.tag)
            except OSError as e:
                note(httplog, "%s slow cut: %s" % (self.server.tag, type(e).__name__))
            return
        f = os.path.normpath(os.path.join(DIR, "www", p.lstrip("/")))
        if os.path.isdir(f):
            f = os.path.join(f, "index.html")
        if not f.startswith(os.path.join(DIR, "www")) or not os.path.isfile(f):
            self.send_error(404)
            return
        data = open(f, "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if f.endswith(".html") else "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:
            pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        note(httplog, "%s POST %s %d bytes" % (self.server.tag, self.path, len(body)))
        out = b"got %d\n" % len(body)
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def serve_web(addr, tag, tls):
    srv = ThreadingHTTPServer(addr, Web)
    srv.daemon_threads = True
    srv.tag = tag
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(DIR, "tls.pem"), os.path.join(DIR, "tls.key"))

        def sni(sock, name, c):
            note(httplog, "%s sni %s" % (tag, name))
        ctx.sni_callback = sni
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
    return srv


udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("192.0.2.53", 53))
servers = [Tcp(("192.0.2.53", 53), DnsTcp), serve_web(("192.0.2.10", 80), "http", False),
           serve_web(("192.0.2.11", 443), "https", True)]
threading.Thread(target=dns_udp, args=(udp,), daemon=True).start()
for s in servers:
    threading.Thread(target=s.serve_forever, daemon=True).start()
note(httplog, "ready")
note(dnslog, "ready")
while True:
    time.sleep(3600)
