"""Local servers for the remote-data tests, each run as its own process on 127.0.0.1 (a
server inside the test process would need the GIL that a running pipeline may hold):

  python remote_servers.py http ROOT [--no-range]
      serves the files under ROOT with HEAD and single byte ranges (206), or, with
      --no-range, always the whole file (200), as servers that ignore Range do;
  python remote_servers.py proxy UPSTREAM_PORT PLAN
      forwards every request to 127.0.0.1:UPSTREAM_PORT, injecting faults by PLAN, a
      comma-separated cycle over the requests: "ok", "503" (S3's SlowDown), "reset" (half
      the body, then a TCP reset), "stall" (headers, then silence for STALL_S seconds),
      "slow" (the answer after SLOW_S seconds, within the client's timeout), "drop" (the
      connection closed before any answer). GET /__stats answers the counts as JSON.
      With STK_PROXY_FAIL_GET=SUBSTRING in the environment, every GET of a path holding
      SUBSTRING answers 503 (HEAD still works): an object that cannot be read (counted
      as "doomed" in the stats); with STK_PROXY_FORBID=SUBSTRING, every request for such
      a path answers 403 AccessDenied.

  python remote_servers.py sigv4 SECRET REGION
      an S3 endpoint that checks every request's AWS Signature V4 as S3 does (canonical
      request from the method, path, sorted query, the signed headers, and the payload
      hash the x-amz-content-sha256 header states; HMAC chain from the secret), answering
      403 SignatureDoesNotMatch when it differs; GET of any key answers b"signed ok",
      a listing (list-type=2) an empty one, PUT and HEAD succeed.

Each prints "PORT <n>" on its first line of standard output once it listens.
"""

import http.client
import http.server
import json
import os
import re
import socket
import socketserver
import struct
import sys
import threading
import time

STALL_S = float(os.environ.get("STK_TEST_STALL_S", "4"))
SLOW_S = float(os.environ.get("STK_TEST_SLOW_S", "0.3"))


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def no_delay(handler):
    # headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm
    # holds the body until the client's delayed ACK (40 ms a request)
    handler.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class RangeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root = "."
    ranges = True

    def setup(self):
        super().setup()
        no_delay(self)

    def log_message(self, *args):
        pass

    def _path(self):
        rel = self.path.split("?", 1)[0].lstrip("/")
        path = os.path.realpath(os.path.join(self.root, rel))
        if not path.startswith(os.path.realpath(self.root)) or not os.path.isfile(path):
            return None
        return path

    def _answer(self, body_wanted):
        path = self._path()
        if path is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = os.path.getsize(path)
        a, b = 0, size - 1
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if m and self.ranges:
            a = int(m.group(1))
            b = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            if a > b:
                self.send_response(416)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {a}-{b}/{size}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(b - a + 1))
        self.end_headers()
        if body_wanted:
            with open(path, "rb") as f:
                f.seek(a)
                self.wfile.write(f.read(b - a + 1))

    def do_GET(self):
        self._answer(True)

    def do_HEAD(self):
        self._answer(False)


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = 0
    plan = ["ok"]
    lock = threading.Lock()
    counter = 0
    stats = {}

    def setup(self):
        super().setup()
        no_delay(self)

    def log_message(self, *args):
        pass

    def _next_fault(self):
        with self.lock:
            kind = self.plan[ProxyHandler.counter % len(self.plan)]
            ProxyHandler.counter += 1
            self.stats[kind] = self.stats.get(kind, 0) + 1
        return kind

    def _forward(self):
        length = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(length) if length else None
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
        conn.request(self.command, self.path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        self.head_length = r.getheader("Content-Length", "0")  # HEAD: the object's size
        out = (r.status, [(k, v) for k, v in r.getheaders()
                          if k.lower() not in ("connection", "transfer-encoding",
                                               "content-length")], data)
        conn.close()
        return out

    def _send(self, status, headers, data, length=None):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data) if length is None else length))
        self.end_headers()

    def _reset(self):
        # SO_LINGER 0: close() sends a RST, as a dropped connection does
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def _handle(self):
        if self.path == "/__stats":
            data = json.dumps(self.stats).encode()
            self._send(200, [("Content-Type", "application/json")], data)
            self.wfile.write(data)
            return
        kind = self._next_fault()
        doomed = os.environ.get("STK_PROXY_FAIL_GET")
        if doomed and self.command == "GET" and doomed in self.path:
            kind = "503"  # this object's reads always fail: retries must give up
            with self.lock:
                self.stats["doomed"] = self.stats.get("doomed", 0) + 1
        forbidden = os.environ.get("STK_PROXY_FORBID")
        if forbidden and forbidden in self.path:
            self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            data = b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
            self._send(403, [("Content-Type", "application/xml")], data)
            if self.command != "HEAD":
                self.wfile.write(data)
            return
        if kind == "drop":
            self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            return self._reset()
        if kind == "503":
            self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            data = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>SlowDown</Code>"
                    b"<Message>Please reduce your request rate.</Message></Error>")
            self._send(503, [("Content-Type", "application/xml")], data)
            if self.command != "HEAD":
                self.wfile.write(data)
            return
        status, headers, data = self._forward()
        if kind == "slow":
            time.sleep(SLOW_S)
        if kind in ("reset", "stall") and self.command != "HEAD" and len(data) >= 2:
            self._send(status, headers, data)  # the real length: the body will fall short
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            if kind == "stall":
                time.sleep(STALL_S)
            return self._reset()
        self._send(status, headers, data,
                   length=self.head_length if self.command == "HEAD" else len(data))
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _handle


class SigV4Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    secret = ""
    region = ""

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        no_delay(self)

    def _expected_signature(self, signed, body):
        import hashlib
        import hmac
        import urllib.parse
        lower = {k.lower(): v for k, v in self.headers.items()}
        u = urllib.parse.urlsplit(self.path)
        enc = lambda x: urllib.parse.quote(x, safe="-_.~")  # noqa: E731
        query = "&".join(f"{enc(k)}={enc(v)}" for k, v in
                         sorted(urllib.parse.parse_qsl(u.query, keep_blank_values=True)))
        headers = "".join(f"{k}:{' '.join(lower.get(k, '').split())}\n" for k in signed)
        payload = lower.get("x-amz-content-sha256", hashlib.sha256(body).hexdigest())
        canonical = "\n".join([self.command, u.path, query, headers, ";".join(signed), payload])
        date = lower.get("x-amz-date", "")
        scope = f"{date[:8]}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", date, scope,
                             hashlib.sha256(canonical.encode()).hexdigest()])
        key = ("AWS4" + self.secret).encode()
        for part in (date[:8], self.region, "s3", "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()

    def _handle(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(n) if n else b""
        auth = self.headers.get("Authorization", "")
        ok = False
        if auth.startswith("AWS4-HMAC-SHA256 "):
            fields = dict(f.strip().split("=", 1) for f in auth[17:].split(","))
            ok = (fields.get("Signature") ==
                  self._expected_signature(fields["SignedHeaders"].split(";"), body))
        if not ok:
            data = b"<Error><Code>SignatureDoesNotMatch</Code></Error>"
            status = 403
        elif "list-type=2" in self.path:
            data = (b"<ListBucketResult><IsTruncated>false</IsTruncated>"
                    b"</ListBucketResult>")
            status = 200
        else:
            data = b"signed ok" if self.command in ("GET", "HEAD") else b""
            status = 200
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_HEAD = _handle


def main():
    kind = sys.argv[1]
    if kind == "http":
        RangeHandler.root = sys.argv[2]
        RangeHandler.ranges = "--no-range" not in sys.argv
        handler = RangeHandler
    elif kind == "sigv4":
        SigV4Handler.secret, SigV4Handler.region = sys.argv[2], sys.argv[3]
        handler = SigV4Handler
    else:
        ProxyHandler.upstream = int(sys.argv[2])
        ProxyHandler.plan = sys.argv[3].split(",")
        handler = ProxyHandler
    srv = Server(("127.0.0.1", 0), handler)
    tls = [a for a in sys.argv if a.startswith("--tls=")]
    if tls:  # --tls=CERT.pem,KEY.pem: https:// with that certificate
        import ssl
        cert, key = tls[0][len("--tls="):].split(",")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("PORT", srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
