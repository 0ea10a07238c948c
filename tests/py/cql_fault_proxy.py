"""A TCP proxy in front of a Cassandra node that replaces the answers to some
requests with ERROR frames, as a node that timed out or is overloaded sends
them: the cql:// reader's and writer's retries are tested through it.

Which requests: by default token-range queries (QUERY frames whose text has
"token("), as the reader sends; with `writes=True`, EXECUTE and BATCH frames,
as the writer sends. Every `every`-th such answer is replaced (every=1: all
of them); with `once=True`, a request is failed at most once (its second
sending goes through), so that a client that retries always finishes. With
`drop=True` the connection is closed instead of the answer being replaced,
as when a node restarts or a connection is reset (the request may well have
been executed). Frames are parsed both ways, and answers matched to requests by
stream id, so that clients with many requests in flight work too. every=0
injects nothing: the proxy then only counts the traffic (`traffic`: frames,
LZ4-compressed frames and body bytes each way). With
`hold_after=N`, the answers to targeted requests after the N-th are held
(`holding` is set) until release(): a client stalls mid-scan. A connection
the node refuses (it is down) is closed at once."""
from __future__ import annotations

import socket
import struct
import threading
import time

READ_TIMEOUT = 0x1200
WRITE_TIMEOUT = 0x1100
OVERLOADED = 0x1001

OP_QUERY, OP_RESULT, OP_EXECUTE, OP_BATCH, OP_ERROR = 0x07, 0x08, 0x0A, 0x0D, 0x00


class FaultProxy:
    def __init__(self, node, code: int, every: int, writes: bool = False, once: bool = False,
                 drop: bool = False, hold_after: int | None = None):
        self.node, self.code, self.every, self.writes = node, code, every, writes
        self.once, self.drop = once, drop
        self.hold_after = hold_after
        self.holding = threading.Event()
        self._released = threading.Event()
        self._failed = set()  # requests failed already (once=True)
        self.injected = 0
        self.traffic = {"up": [0, 0, 0], "down": [0, 0, 0]}  # frames, compressed, bytes
        self._seen = 0
        self._lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def url(self, table: str) -> str:
        """cql:// of `table` ("ks.t") through the proxy."""
        return f"cql://{self.node.username}:{self.node.password}@127.0.0.1:{self.port}/{table}"

    def release(self):
        """Lets the answers held (hold_after) through, and all later ones."""
        self._released.set()

    def close(self):
        self._released.set()
        try:  # wakes the thread blocked in accept(): close() alone would not
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()

    def _targeted(self, head: bytes, body: bytes) -> bool:
        if self.writes:
            return head[4] in (OP_EXECUTE, OP_BATCH)
        return head[4] == OP_QUERY and b"token(" in body

    def _error_body(self) -> bytes:
        msg = b"injected by the test proxy"
        body = struct.pack(">iH", self.code, len(msg)) + msg
        if self.code == READ_TIMEOUT:  # <cl><received><blockfor><data_present>
            body += struct.pack(">Hiib", 1, 0, 1, 0)
        elif self.code == WRITE_TIMEOUT:  # <cl><received><blockfor><writeType>
            body += struct.pack(">HiiH", 1, 0, 1, 6) + b"SIMPLE"
        return body

    @staticmethod
    def _read_frame(sock):
        try:
            head = b""
            while len(head) < 9:
                chunk = sock.recv(9 - len(head))
                if not chunk:
                    return None
                head += chunk
            length = int.from_bytes(head[5:9], "big")
            body = b""
            while len(body) < length:
                chunk = sock.recv(min(1 << 20, length - len(body)))
                if not chunk:
                    return None
                body += chunk
            return head, body
        except OSError:  # either side went away
            return None

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                if listener.fileno() < 0:  # closed by close()
                    return
                time.sleep(0.01)  # a client gone before it was accepted, or closing
                continue
            try:
                upstream = socket.create_connection((self.node.host, self.node.port))
            except OSError:  # the node is down: so is this connection
                client.close()
                continue
            asked = {}  # stream id -> is the request targeted
            threading.Thread(target=self._up, args=(client, upstream, asked), daemon=True).start()
            threading.Thread(target=self._down, args=(upstream, client, asked),
                             daemon=True).start()

    def _count(self, way, head, body):
        with self._lock:
            t = self.traffic[way]
            t[0] += 1
            t[1] += head[1] & 0x01
            t[2] += len(body)

    def _up(self, client, upstream, asked):
        while (frame := self._read_frame(client)) is not None:
            head, body = frame
            self._count("up", head, body)
            asked[head[2:4]] = self._targeted(head, body) and body
            try:
                upstream.sendall(head + body)
            except OSError:
                break
        upstream.close()

    def _down(self, upstream, client, asked):
        while (frame := self._read_frame(upstream)) is not None:
            head, body = frame
            self._count("down", head, body)
            request = asked.pop(head[2:4], False)
            if request and head[4] == OP_RESULT:
                with self._lock:
                    self._seen += 1
                    inject = self.every > 0 and self._seen % self.every == 0
                    if self.once:
                        inject = inject and request not in self._failed
                        self._failed.add(request) if inject else None
                    self.injected += inject
                    hold = self.hold_after is not None and self._seen > self.hold_after
                if hold and not self._released.is_set():
                    self.holding.set()
                    self._released.wait()
                if inject and self.drop:
                    for sock in (client, upstream):
                        try:
                            sock.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        sock.close()
                    return
                if inject:
                    body = self._error_body()
                    # version, no flags (no warnings or tracing id), stream, ERROR
                    head = (bytes([head[0], 0]) + head[2:4] + bytes([OP_ERROR])
                            + struct.pack(">i", len(body)))
            try:
                client.sendall(head + body)
            except OSError:
                break
        client.close()
