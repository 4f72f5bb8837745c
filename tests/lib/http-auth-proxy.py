#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A small authenticating reverse proxy on loopback, for the integration
tests of Streamable HTTP upstream servers (servers.d URL=): a request whose
X-Api-Key header is not the content of KEY_FILE (one final newline dropped)
gets 401; every other one goes on to 127.0.0.1:UPSTREAM_PORT as it came, and
its answer comes back as it is sent (an event stream included, piece by
piece), then the connection closes. The key is read from a file so that it
never is on a command line (which `systemctl show` would show). Each
request's method and whether its key was right go to stdout, never the key.

usage: http-auth-proxy.py PORT UPSTREAM_PORT KEY_FILE"""
import http.client
import http.server
import sys

PORT, UPSTREAM, KEY_FILE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with open(KEY_FILE) as f:
    KEY = f.read()
if KEY.endswith("\n"):
    KEY = KEY[:-1]
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def forward(self):
        ok = self.headers.get("X-Api-Key") == KEY
        print("%s %s key=%s" % (self.command, self.path, "right" if ok else "wrong"), flush=True)
        if not ok:
            body = b'{"error": "unauthorized"}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
        up = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=120)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        up.request(self.command, self.path, body=body or None, headers=headers)
        resp = up.getresponse()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.end_headers()
        try:
            while True:
                chunk = resp.read1(65536)
                if not chunk:
                    break
                self.wfile.write(chunk)
                self.wfile.flush()
        except OSError:
            pass
        up.close()

    do_GET = do_POST = do_DELETE = forward


server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Proxy)
server.daemon_threads = True
server.serve_forever()
