"""A retiring worker (:class:`guard.server.workers.RetiringServer`) on a real socket, in a thread: it stops
accepting, answers what arrives on the connections it holds with ``Connection: close``, then closes the idle ones.
uvicorn's plain shutdown fails the first two tests (it closes a connection with no request in progress at once)."""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import threading
import time

import pytest
import uvicorn

from guard.server import UVICORN_OPTIONS
from guard.server.workers import GC_THRESHOLD0, RetiringServer, Worker

REQUEST = b"GET /%s HTTP/1.1\r\nHost: guard\r\n\r\n"


async def app(scope, receive, send) -> None:
    """Answers ``/slow`` after 0.3 s and anything else at once, with the path as the body."""
    if scope["type"] != "http":
        return
    if scope["path"] == "/slow":
        await asyncio.sleep(0.3)
    body = scope["path"].encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture()
def server():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    srv = RetiringServer(uvicorn.Config(app, lifespan="off", **UVICORN_OPTIONS))
    srv.grace = 3.0  # room for a loaded machine between the test's steps; the default is shorter
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert thread.is_alive() and time.monotonic() < deadline
        time.sleep(0.01)
    yield srv, sock.getsockname()
    srv.force_exit = srv.should_exit = True
    thread.join(timeout=30)
    assert not thread.is_alive()


def connect(server, address) -> socket.socket:
    """A connection the server has accepted (its protocol is in the server's set)."""
    before = len(server.server_state.connections)
    conn = socket.create_connection(address, timeout=10)
    wait_for(lambda: len(server.server_state.connections) > before)
    return conn


def wait_for(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.005)


def response(conn: socket.socket) -> tuple[bytes, dict[bytes, bytes], bytes]:
    """One response: status line, headers, body (by content-length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        assert chunk, f"closed with no response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(b":", 1) for line in lines)}
    while len(body) < int(headers[b"content-length"]):
        body += conn.recv(4096)
    return status, headers, body


def closed(conn: socket.socket) -> bool:
    return conn.recv(1) == b""


def retire(server) -> None:
    server.should_exit = True
    wait_for(lambda: server.retiring)


def answered_then_closed(conn: socket.socket, path: bytes) -> None:
    """The request on ``conn`` is answered (200, its path echoed), told ``Connection: close``, then closed."""
    status, headers, body = response(conn)
    assert status.startswith(b"HTTP/1.1 200") and body == b"/" + path
    assert headers[b"connection"] == b"close"
    assert closed(conn)


def test_a_connection_accepted_before_retiring_gets_its_answer(server):
    srv, address = server
    conn = connect(srv, address)
    retire(srv)
    time.sleep(0.2)  # the request arrives well after the worker began to retire, inside its grace
    conn.sendall(REQUEST % b"late")
    answered_then_closed(conn, b"late")


def test_an_idle_keep_alive_connection_is_answered_then_closed(server):
    srv, address = server
    conn = connect(srv, address)
    conn.sendall(REQUEST % b"first")
    _status, headers, _body = response(conn)
    assert b"connection" not in headers  # kept alive while the worker serves
    retire(srv)
    conn.sendall(REQUEST % b"second")
    answered_then_closed(conn, b"second")


def test_a_response_in_flight_finishes_and_tells_the_client_to_reconnect(server):
    srv, address = server
    conn = connect(srv, address)
    conn.sendall(REQUEST % b"slow")
    wait_for(lambda: srv.server_state.tasks)
    retire(srv)
    answered_then_closed(conn, b"slow")


def test_a_connection_that_stays_idle_is_closed_after_the_grace_and_new_ones_are_not_taken(server):
    srv, address = server
    conn = connect(srv, address)
    other_worker = socket.socket(fileno=os.dup(srv.servers[0].sockets[0].fileno()))  # the listening socket, shared
    t0 = time.monotonic()
    retire(srv)
    late = socket.create_connection(address, timeout=10)  # queued by the kernel for another worker
    time.sleep(0.2)
    assert len(srv.server_state.connections) == 1
    assert closed(conn)
    assert time.monotonic() - t0 >= srv.grace * 0.9
    late.close()
    other_worker.close()


def test_a_workers_server_settles_the_collector_once_it_serves():
    gc_before = gc.get_threshold()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    srv = RetiringServer(uvicorn.Config(app, lifespan="off", **UVICORN_OPTIONS))
    srv.settle_gc = True  # as Worker sets it in a worker's process
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    try:
        thread.start()
        deadline = time.monotonic() + 30
        while not srv.started:
            assert thread.is_alive() and time.monotonic() < deadline
            time.sleep(0.01)
        wait_for(lambda: gc.get_threshold()[0] == GC_THRESHOLD0)  # right after uvicorn's start-up
        assert gc.get_threshold() == (GC_THRESHOLD0, *gc_before[1:])
        assert gc.get_freeze_count() > 1000  # this process's long-lived objects, left out of later collections
        with socket.create_connection(sock.getsockname(), timeout=10) as conn:
            conn.sendall(REQUEST % b"after")
            assert conn.recv(65536).endswith(b"/after")
    finally:
        srv.force_exit = srv.should_exit = True
        thread.join(timeout=30)
        gc.unfreeze()
        gc.set_threshold(*gc_before)
    assert not thread.is_alive()


def test_workers_settle_the_collector_and_other_servers_do_not():
    assert RetiringServer.settle_gc is False
    worker = Worker(uvicorn.Config(app, lifespan="off", **UVICORN_OPTIONS), [])
    assert worker.server.settle_gc is True
