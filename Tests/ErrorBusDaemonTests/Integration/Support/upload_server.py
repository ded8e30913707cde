#!/usr/bin/env python3
"""An upload API that is not errorbus's: POST /upload?name=NAME with multipart/form-data, parsed
by Python's own email package, stored under DIRECTORY. It wants `Authorization: Bearer TOKEN` and
`X-Api-Key: KEY` (401 otherwise) and answers 201 with the SHA-256 of what it stored in
`Repr-Digest` (RFC 9530). Each request is one line on standard error.

  upload_server.py DIRECTORY TOKEN KEY [lie]

With `lie`, it stores nothing and answers 201 with the digest of something else: what a proxy
or a broken deployment answering in the API's place might do.
"""
import base64, hashlib, os, sys
from email import policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

DIRECTORY, TOKEN, KEY = sys.argv[1:4]
LIE = sys.argv[4:5] == ["lie"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        url = urlsplit(self.path)
        if self.headers.get("Authorization") != "Bearer " + TOKEN or self.headers.get("X-Api-Key") != KEY:
            self.answer(401, [("WWW-Authenticate", 'Bearer error="invalid_token"')])
            return
        if url.path != "/upload":
            self.answer(404)
            return
        message = BytesParser(policy=policy.HTTP).parsebytes(
            b"Content-Type: " + self.headers.get("Content-Type", "").encode() + b"\r\n\r\n" + body
        )
        parts = [part for part in message.iter_parts() if part.get_param("name", header="content-disposition") == "file"]
        if not message.is_multipart() or len(parts) != 1:
            self.answer(400)
            return
        if LIE:
            self.answer(201, [("Repr-Digest", "sha-256=:%s:" % base64.b64encode(hashlib.sha256(b"other").digest()).decode())])
            return
        name = parse_qs(url.query)["name"][0]
        data = parts[0].get_payload(decode=True)
        if parts[0].get_filename() != name or "/" in name:
            self.answer(422)
            return
        with open(os.path.join(DIRECTORY, name), "wb") as stored:
            stored.write(data)
        digest = base64.b64encode(hashlib.sha256(data).digest()).decode()
        sys.stderr.write("stored %s tenant=%s\n" % (name, self.headers.get("X-Tenant")))
        self.answer(201, [("Repr-Digest", "sha-256=:%s:" % digest)])

    def log_message(self, format, *args):
        sys.stderr.write("%s %s\n" % (self.command, format % args))


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
sys.stderr.write("upload server listening on %d\n" % server.server_address[1])
sys.stderr.flush()
server.serve_forever()
