"""A tiny HTTP proxy on loopback for memoryd_client's retry tests: it forwards requests to the
live memoryd, or, as its plan says for each request, loses memoryd's answer, answers itself, or
never answers.

    p = Proxy(memoryd_url, lambda n: "drop" if n == 0 else "pass")
    MemorydClient(p.url, ...)     # p.requests: what reached the proxy; p.upstream: memoryd's answers

A plan maps the request number (0 for the first) to a step:
    "pass"                       forward to memoryd and send its answer back
    "drop"                       forward to memoryd, then close the connection without answering
                                 (memoryd applied the request; its answer is lost)
    "hang"                       never answer (until the proxy stops); nothing is forwarded
    (status, headers, body)      answer this without forwarding (body: bytes or str)
"""

import http.client
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "server", "date"}


class Proxy:
    def __init__(self, upstream_url, plan):
        parts = urlsplit(upstream_url)
        self.upstream_host, self.upstream_port = parts.hostname, parts.port
        self.plan = plan
        self.requests = []  # (monotonic time, method, path, headers as a lower-case dict, body)
        self.upstream = []  # (status, headers as a lower-case dict, body) of memoryd's answers
        self._lock = threading.Lock()
        self._release = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.proxy = self
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self):
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def keys(self):
        """The Idempotency-Key of each request that reached the proxy (None where there was none)."""
        return [r[3].get("idempotency-key") for r in self.requests]

    def _record(self, handler, body):
        with self._lock:
            n = len(self.requests)
            headers = {k.lower(): v for k, v in handler.headers.items()}
            self.requests.append((time.monotonic(), handler.command, handler.path, headers, body))
        return self.plan(n)

    def _forward(self, handler, body):
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
        try:
            headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
            conn.request(handler.command, handler.path, body=body or None, headers=headers)
            r = conn.getresponse()
            answer = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            conn.close()
        with self._lock:
            self.upstream.append(answer)
        return answer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - quiet
        pass

    def do_GET(self):
        self._handle()

    def do_POST(self):
        self._handle()

    def _handle(self):
        proxy = self.server.proxy
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        step = proxy._record(self, body)
        self.close_connection = True
        if step == "hang":
            proxy._release.wait()
            return
        if isinstance(step, tuple):
            status, headers, data = step
            self._send(status, headers, data.encode() if isinstance(data, str) else data)
            return
        status, headers, data = proxy._forward(self, body)
        if step == "drop":
            return  # the connection closes without an answer
        self._send(status, headers, data)

    def _send(self, status, headers, data):
        self.send_response(status)
        for k, v in headers.items():
            if k.lower() not in _HOP_BY_HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
