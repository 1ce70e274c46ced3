"""guard's uvicorn protocol sends a response's head with its first body part, and changes nothing else on the wire;
the access log's handler holds lines until a flush, and a flush or close writes them."""

from __future__ import annotations

import asyncio
import gc
import io
import json
import logging
import socket
import time

import pytest

from guard.server.logs import HELD_LINES, HeldStreamHandler
from tests.server.conftest import start, stop


async def app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    path = scope["path"]
    if path == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for part in (b"one,", b"two,", b"three"):
            await send({"type": "http.response.body", "body": part, "more_body": True})
            await asyncio.sleep(0.05)
        await send({"type": "http.response.body", "body": b""})
        return
    answer = json.dumps({"path": path, "echo": body.decode()}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    if path == "/slow":  # the head is held until the body, however long that takes
        await asyncio.sleep(0.3)
    if path == "/slower":  # longer than the keep-alive test's timeout
        await asyncio.sleep(KEEP_ALIVE * 1.6)
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else answer})


KEEP_ALIVE = 0.5


@pytest.fixture(scope="module")
def server():
    url, srv, thread = start(app)
    yield int(url.rsplit(":", 1)[1])
    stop(srv, thread)


def read_response(sock: socket.socket) -> tuple[bytes, bytes]:
    """Head and body of one response with a Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the connection was closed"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        int(v) for k, v in (line.split(b": ", 1) for line in head.split(b"\r\n")[1:]) if k == b"content-length"
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the connection was closed"
        body += chunk
    return head, body


def test_head_and_body_arrive_together(server):
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(b"POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
        first = sock.recv(65536)  # uvicorn's own protocol sends the head 0.3 s before the body
        assert first.startswith(b"HTTP/1.1 200 OK\r\n")
        assert first.endswith(json.dumps({"path": "/slow", "echo": "hi"}).encode())


def test_keep_alive_head_then_get_on_one_connection(server):
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(b"HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        assert data.startswith(b"HTTP/1.1 200 OK\r\n") and data.endswith(b"\r\n\r\n")  # a HEAD has no body write
        sock.sendall(b"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
        head, body = read_response(sock)
        assert head.startswith(b"HTTP/1.1 200 OK") and json.loads(body) == {"path": "/b", "echo": "abc"}


def test_streamed_response_arrives_whole(server):
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    assert b"transfer-encoding: chunked" in head.lower()
    assert body == b"4\r\none,\r\n4\r\ntwo,\r\n5\r\nthree\r\n0\r\n\r\n"


def test_expect_100_continue_is_sent_before_the_body(server):
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(b"POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"ok")
        _head, body = read_response(sock)
        assert json.loads(body) == {"path": "/c", "echo": "ok"}


def test_access_lines_are_held_until_a_flush_and_none_is_lost():
    stream = io.StringIO()  # writes through, as stdout does under PYTHONUNBUFFERED
    handler = HeldStreamHandler(stream)
    log = logging.getLogger("tests.server.held")
    log.addHandler(handler)
    log.propagate = False
    log.setLevel(logging.INFO)
    try:
        log.info("first")  # nothing written for a second: the first line goes at once
        log.info("second")
        log.info("third")
        assert stream.getvalue() == "first\n"  # held
        handler.flush()
        assert stream.getvalue() == "first\nsecond\nthird\n"
        for i in range(HELD_LINES):
            log.info(f"line {i}")
        assert stream.getvalue().count("line") == HELD_LINES  # a full batch is written without a flush
        log.info("last")
        assert not stream.getvalue().endswith("last\n")
        handler.close()
        assert stream.getvalue().endswith("last\n")  # closing writes what is held
        assert stream.getvalue().count("\n") == 3 + HELD_LINES + 1
    finally:
        log.removeHandler(handler)


def test_a_held_line_reaches_the_stream_as_logger_info_writes_it_and_only_in_guard_serves_set_up():
    from guard.server import LOG_CONFIG
    from guard.server.app import access_line
    from guard.server.logs import ACCESS_LOGGER, plain_handler

    streams = [io.StringIO(), io.StringIO()]
    access = logging.getLogger(ACCESS_LOGGER)
    saved = (access.handlers[:], access.propagate, access.level, access.filters[:])
    line = access_line("ab" * 16, 'k"\u00e9y', "POST", "/v1/run", 200, 0.0012345)
    assert json.loads(line) == {
        "request_id": "ab" * 16,
        "key": 'k"\u00e9y',
        "method": "POST",
        "route": "/v1/run",
        "status": 200,
        "ms": 1.234,
    }
    assert line == json.dumps(json.loads(line))  # the text json.dumps makes of it
    try:
        for stream, held in zip(streams, (False, True)):
            # the access logger as guard serve's LOG_CONFIG sets it up, writing to ``stream``
            made = HeldStreamHandler(stream)
            made.setFormatter(logging.Formatter(LOG_CONFIG["formatters"]["plain"]["format"]))
            access.handlers[:] = [made]
            access.propagate, access.filters[:] = LOG_CONFIG["loggers"][ACCESS_LOGGER]["propagate"], []
            access.setLevel(LOG_CONFIG["loggers"][ACCESS_LOGGER]["level"])
            handler = plain_handler(access)
            assert handler is made
            assert isinstance(handler, HeldStreamHandler)
            for _ in range(3):
                handler.hold(line) if held else access.info(line)
            handler.flush()
        assert streams[0].getvalue() == streams[1].getvalue() == (line + "\n") * 3
        # anything that could change or divert the line: the record's own path
        access.addFilter(lambda record: True)
        assert plain_handler(access) is None
        access.filters.clear()
        access.propagate = True
        assert plain_handler(access) is None
        access.propagate = False
        access.handlers[0].setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        assert plain_handler(access) is None
        access.handlers[0].setFormatter(logging.Formatter("%(message)s"))
        assert plain_handler(access) is access.handlers[0]
        access.addHandler(logging.NullHandler())
        assert plain_handler(access) is None
    finally:
        access.handlers[:], access.propagate, access.filters[:] = saved[0], saved[1], saved[3]
        access.setLevel(saved[2])


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False


def test_an_idle_connection_closes_after_the_keep_alive_timeout_and_a_busy_one_stays_open():
    url, srv, thread = start(app, timeout_keep_alive=KEEP_ALIVE)
    port = int(url.rsplit(":", 1)[1])
    request = b"POST /k HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok"
    try:
        with socket.create_connection(("127.0.0.1", port)) as idle:
            idle.sendall(request)
            read_response(idle)
            assert not _closed_by_server(idle, KEEP_ALIVE * 0.5)  # not before the timeout
            assert _closed_by_server(idle, KEEP_ALIVE * 4)  # and soon after it
        with socket.create_connection(("127.0.0.1", port), timeout=10) as busy:
            for _ in range(6):  # 6 x 0.3 s: three timeouts' worth, never idle for one
                busy.sendall(request)
                _head, body = read_response(busy)
                assert json.loads(body) == {"path": "/k", "echo": "ok"}
                time.sleep(KEEP_ALIVE * 0.6)
            busy.sendall(request.replace(b"/k", b"/slower"))  # a response slower than the timeout
            _head, body = read_response(busy)
            assert json.loads(body)["path"] == "/slower"
            busy.sendall(request)
            read_response(busy)
            assert _closed_by_server(busy, KEEP_ALIVE * 4)
    finally:
        stop(srv, thread)


def _cyclic_garbage_of(send_requests) -> int:
    """Objects the collector finds unreachable after ``send_requests()`` (the collector off meanwhile, so none
    is freed before it is counted)."""
    gc.collect()
    gc.disable()
    try:
        send_requests()
        time.sleep(0.05)  # the server's thread completes the last response's cycle
        return gc.collect()
    finally:
        gc.enable()


def _keep_alive_requests(port: int, request: bytes, n: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for _ in range(n):
            sock.sendall(request)
            head, _body = read_response(sock)
            assert head.startswith(b"HTTP/1.1 200 OK")


def test_a_response_leaves_no_garbage_for_the_collector(server):
    # the held head's wrapper and its cycle refer to each other until the response completes; left so, each
    # request's pair (15 objects) waited for a young collection, whose pauses were a worker's slowest requests
    request = b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
    n = 200
    assert _cyclic_garbage_of(lambda: _keep_alive_requests(server, request, n)) < n


def test_a_v1_run_request_leaves_no_garbage_for_the_collector(served_sqlite):
    from guard import demo
    from tests.server.conftest import KEYS

    body = json.dumps(demo.payloads()["answer"]).encode()
    port = int(served_sqlite.url.rsplit(":", 1)[1])
    head = (
        f"POST /v1/run?policy=orders&now={demo.NOW.isoformat().replace('+', '%2B')} HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {KEYS['fuzz']}\r\nX-Guard-Principal: {demo.PRINCIPAL}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    request = head.encode() + body
    _keep_alive_requests(port, request, 5)  # caches filled, the first run's one-off objects made
    n = 200
    assert _cyclic_garbage_of(lambda: _keep_alive_requests(port, request, n)) < n
