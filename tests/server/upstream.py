"""A scripted OpenAI-compatible chat-completions server: a real HTTP server on loopback in the test process.

Each request takes the next step of the script: ``("payload", dict)`` answers with that payload as the assistant
message, ``("content", str)`` with raw text, ``("sleep", s)`` waits then answers with the next step,
``("status", n)`` fails with HTTP n, ``("garbage", bytes)`` answers 200 with a body that is not JSON.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Upstream:
    def __init__(self) -> None:
        self.script: deque[tuple[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                owner.requests.append(json.loads(body))
                owner.headers.append(dict(self.headers))
                assert self.path == "/v1/chat/completions"
                step = owner.script.popleft() if owner.script else ("status", 500)
                while step[0] == "sleep":
                    time.sleep(step[1])
                    step = owner.script.popleft() if owner.script else ("status", 500)
                kind, value = step
                if kind == "status":
                    self._send(value, b'{"error": {"message": "scripted failure"}}')
                elif kind == "garbage":
                    self._send(200, value)
                else:
                    content = json.dumps(value) if kind == "payload" else value
                    reply = {
                        "id": "chatcmpl-scripted",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "scripted-model",
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                        ],
                    }
                    self._send(200, json.dumps(reply).encode())

            def _send(self, status: int, body: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the proxy gave up waiting (the timeout case)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def play(self, *steps: tuple[str, Any]) -> None:
        self.script = deque(steps)
        self.requests.clear()
        self.headers.clear()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
