"""Real servers the Python tests (tests/py and tests/pkg) start on loopback:
s3s-fs, an S3 server that verifies SigV4 signatures (crates.io, built at a
pinned version into .cache/s3s-fs by scripts/setup.sh), and a TCP forwarder
that sits in front of a server to count connections and see the requests
clients send, bytes passing unchanged so that signatures still verify."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
S3_ACCESS_KEY = "sluicetestkey"
S3_SECRET_KEY = "sluice-test-secret-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, what: str, log=None) -> None:
    """Waits until something listens on 127.0.0.1:port; fails the test if
    `proc` exits first or nothing listens within 20 s."""
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                detail = log() if log is not None else proc.stderr.read().decode()
                pytest.fail(f"{what} did not start: {detail}")
            time.sleep(0.05)


def s3s_fs_binary() -> str | None:
    env = os.environ.get("SLUICE_S3S_FS")
    if env:
        return env
    cand = REPO / ".cache" / "s3s-fs" / "bin" / "s3s-fs"
    return str(cand) if cand.exists() else None


def start_s3s_fs(binary: str, data: Path, port: int, log, log_path: Path,
                 virtual_hosts=()) -> subprocess.Popen:
    """s3s-fs serving `data` (bucket/key is DIR/bucket/key) on
    127.0.0.1:port, checking signatures with the test keys; it takes
    virtual-hosted requests (Host: bucket.H) for each H (host:port, as the
    client sends it) in `virtual_hosts`. Returns once it listens."""
    domains = [arg for host in virtual_hosts for arg in ("--domain", host)]
    proc = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", str(port),
                             "--access-key", S3_ACCESS_KEY, "--secret-key", S3_SECRET_KEY,
                             *domains, str(data)],
                            stdout=log, stderr=subprocess.STDOUT)
    wait_for_port(port, proc, "s3s-fs", log=lambda: log_path.read_text())
    return proc


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def silent_server():
    """A server on 127.0.0.1 that accepts connections and never answers (a
    hung server): yields (port, the connections it holds so far)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    held = []
    stop_accepting = threading.Event()

    def accept():
        while not stop_accepting.is_set():
            try:
                held.append(listener.accept()[0])  # kept open, never answered
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], held
    finally:
        stop_accepting.set()
        thread.join()
        for c in held:
            c.close()
        listener.close()


class ConnectionCounter:
    """A TCP forwarder on loopback in front of a server that counts the
    connections clients open through it and the GET requests they send, and
    keeps each request's method, target and headers (bytes pass unchanged,
    so SigV4 signatures over the Host header still verify). `bytes_per_s`
    throttles what each connection brings back, as a link to a distant
    object store would; `up_bytes_per_s` what each sends (uploads)."""

    def __init__(self, upstream_port: int, bytes_per_s: float | None = None,
                 up_bytes_per_s: float | None = None):
        self.upstream = upstream_port
        self.bytes_per_s = bytes_per_s
        self.up_bytes_per_s = up_bytes_per_s
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self._gets = 0
        self.received = 0  # bytes the server sent (headers too)
        self._requests: list[dict] = []  # {"method", "target", "headers" (lower-case names)}
        self.unparsed: list[str] = []  # why a connection's requests could not be followed
        # A predicate on a request (as in `requests`): the answer to the first
        # request it selects is never passed on, its connection closed instead
        # (the server did the work; the client lost the answer).
        self.lose_answer = None
        self.after_loss = None  # called (no arguments) once an answer was lost
        self.answers_lost = 0
        self._doomed: set = set()  # server sockets whose next answer is lost
        self.lock = threading.Lock()  # connections' threads count at once
        threading.Thread(target=self._accept, daemon=True).start()

    def _counted(self):
        """Counts are exact only when every connection's requests were
        followed: a test reading them fails rather than see too few."""
        with self.lock:
            assert not self.unparsed, f"requests not followed: {self.unparsed}"

    @property
    def gets(self) -> int:
        self._counted()
        return self._gets

    @property
    def requests(self) -> list[dict]:
        self._counted()
        return self._requests

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:  # the server is down: the client sees a reset, as it would
                client.close()
                continue
            for a, b, up in ((client, server, True), (server, client, False)):
                threading.Thread(target=self._pipe, args=(a, b, up), daemon=True).start()

    def _parse_requests(self, pending: bytearray, body_left: int, server=None) -> int:
        """Takes the complete request heads off the front of `pending`,
        skipping bodies by Content-Length; returns the body bytes still to
        skip."""
        while True:
            if body_left:
                n = min(body_left, len(pending))
                del pending[:n]
                body_left -= n
                if body_left:
                    return body_left
            end = pending.find(b"\r\n\r\n")
            if end < 0:
                return 0
            lines = pending[:end].decode("latin-1").split("\r\n")
            del pending[:end + 4]
            parts = lines[0].split(" ")
            if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                raise ValueError(f"not an HTTP/1.x request line: {lines[0][:80]!r}")
            method, target = parts[:2]
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            request = {"method": method, "target": target, "headers": headers}
            with self.lock:
                self._requests.append(request)
                self._gets += method == "GET"
                if self.lose_answer is not None and self.lose_answer(request):
                    self.lose_answer = None
                    self._doomed.add(server)
            if "transfer-encoding" in headers:
                raise ValueError("a chunked body")
            body_left = int(headers.get("content-length", "0"))

    def _pipe(self, src, dst, up):
        pending, body_left, parsing = bytearray(), 0, up
        try:
            while data := src.recv(1 << 16):
                if parsing:
                    pending += data
                    try:
                        body_left = self._parse_requests(pending, body_left, dst)
                    except ValueError as e:  # forward only, and say so
                        parsing = False
                        with self.lock:
                            self.unparsed.append(str(e))
                if not up:
                    with self.lock:
                        lost = src in self._doomed
                        self.answers_lost += lost
                        self.received += 0 if lost else len(data)
                    if lost:
                        if self.after_loss is not None:
                            self.after_loss()
                        break
                    if self.bytes_per_s:
                        time.sleep(len(data) / self.bytes_per_s)
                elif self.up_bytes_per_s:
                    time.sleep(len(data) / self.up_bytes_per_s)
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.listener.close()
