"""An OpenAI-compatible chat endpoint on 127.0.0.1 for the LLM attacker's tests: a real HTTP
server in a thread, answering ``answer(user message)``; it records every request and its
Authorization header, and answers ``fail_code`` (with Retry-After: 0) to the requests whose
number is in ``fail``."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's naming)
        server = self.server
        server.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        server.auth.append(self.headers.get("Authorization"))
        if len(server.requests) in server.fail:
            self.send_response(server.fail_code)
            self.send_header("Retry-After", "0")
            self.end_headers()
            return
        answer = server.answer(server.requests[-1]["messages"][-1]["content"])
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@contextmanager
def chat_endpoint(answer: Callable[[str], str]) -> Iterator[ThreadingHTTPServer]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.answer, srv.requests, srv.auth, srv.fail, srv.fail_code = answer, [], [], set(), 429
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
