#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The component test's HTTP server: files of DIR on ADDR:80, and POST
answers with the body it read (Content-Length bytes)."""
import http.server
import sys
from functools import partial


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body) + 6))
        self.end_headers()
        self.wfile.write(b"echo: " + body)


addr, root = sys.argv[1], sys.argv[2]
http.server.ThreadingHTTPServer((addr, 80), partial(Handler, directory=root)).serve_forever()
