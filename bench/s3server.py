"""A local S3 server for the benchmarks: s3s-fs (the one tests/py/test_s3.py
uses, built by scripts/setup.sh into .cache/s3s-fs/) on loopback, with
credentials, over a directory where DIR/bucket/key is the object bucket/key.
Tools find it the way AWS tools do: AWS_ENDPOINT_URL, AWS_REGION,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (see `env()`).

Also a counting reverse proxy (`CountingProxy`): forwards every request to the
server unchanged (Host header included, so SigV4 signatures stay valid) and
counts the response body bytes, to measure how many bytes a reader fetched.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import http.server
import os
import shutil
import socket
import subprocess
import threading
import time
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ACCESS_KEY = "sluicebenchkey"
SECRET_KEY = "sluice-bench-secret-0123456789"
REGION = "us-east-1"
BUCKET = "bench"


def binary() -> Optional[str]:
    env = os.environ.get("SLUICE_S3S_FS")
    if env:
        return env
    cand = os.path.join(ROOT, ".cache", "s3s-fs", "bin", "s3s-fs")
    return cand if os.path.exists(cand) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: Optional[subprocess.Popen], timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            if proc is not None and proc.poll() is not None:
                return False
            time.sleep(0.05)
    return False


def env(endpoint: str) -> dict:
    """The AWS_* variables that point sluice, boto3 and friends at the server."""
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}


class S3Server:
    """s3s-fs over `root` on 127.0.0.1:<free port>; objects are files in
    root/BUCKET/ (hard links to the data files, so nothing is copied)."""

    def __init__(self, root: str):
        self.root = root
        self.proc: Optional[subprocess.Popen] = None
        self.port = 0
        os.makedirs(os.path.join(root, BUCKET), exist_ok=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, key: str) -> str:
        return f"s3://{BUCKET}/{key}"

    def http_url(self, key: str) -> str:
        return f"{self.endpoint}/{BUCKET}/{key}"

    def put(self, path: str, key: Optional[str] = None) -> str:
        """Makes the file `path` the object BUCKET/key (a hard link, else a
        copy) with the metadata a PUT through the server would have stored."""
        key = key or os.path.basename(path)
        dst = os.path.join(self.root, BUCKET, key)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not (os.path.exists(dst) and os.path.samefile(dst, path)):
            if os.path.exists(dst):
                os.unlink(dst)
            try:
                os.link(path, dst)
            except OSError:
                shutil.copyfile(path, dst)
        self._store_etag(path, key)
        return self.url(key)

    def _store_etag(self, path: str, key: str) -> None:
        """s3s-fs keeps an object's ETag (its MD5) in a sidecar written by PUT:
        ROOT/.bucket-<b64url>.object-<b64url>.internal.json. For an object
        laid into the directory there is none, and then *every* GET and HEAD
        re-hashes the whole file (about 0.1 s for a 39 MB object): a server
        cost, not the reader's, that would dominate any multi-request read.
        So write the sidecar a PUT would have written; the MD5 is cached
        next to the data file, keyed by size and mtime."""
        def b64(s: str) -> str:
            return base64.urlsafe_b64encode(s.encode()).decode().rstrip("=")
        st = os.stat(path)
        cache = path + ".md5.json"
        md5 = None
        try:
            with open(cache) as f:
                c = json.load(f)
            if c.get("size") == st.st_size and c.get("mtime_ns") == st.st_mtime_ns:
                md5 = c["md5"]
        except (OSError, ValueError, KeyError):
            pass
        if md5 is None:
            h = hashlib.md5()
            with open(path, "rb") as f:
                while True:
                    b = f.read(1 << 22)
                    if not b:
                        break
                    h.update(b)
            md5 = h.hexdigest()
            with open(cache, "w") as f:
                json.dump({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "md5": md5}, f)
        with open(os.path.join(self.root, f".bucket-{b64(BUCKET)}.object-{b64(key)}.internal.json"),
                  "w") as f:
            json.dump({"e_tag": md5}, f)

    def start(self) -> "S3Server":
        exe = binary()
        if exe is None:
            raise RuntimeError("s3s-fs not built (scripts/setup.sh builds it into .cache/s3s-fs)")
        self.port = free_port()
        self.log = open(os.path.join(self.root, "server.log"), "wb")
        self.proc = subprocess.Popen([exe, "--host", "127.0.0.1", "--port", str(self.port),
                                      "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY,
                                      self.root], stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        if not wait_port(self.port, self.proc):
            self.stop()
            raise RuntimeError("s3s-fs did not start; see " + os.path.join(self.root, "server.log"))
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if getattr(self, "log", None):
            self.log.close()
            self.log = None


def minio_binary() -> Optional[str]:
    """MinIO's server, built by bench/install_minio.sh (SLUICE_MINIO overrides)."""
    env = os.environ.get("SLUICE_MINIO")
    if env:
        return env
    for cand in (os.path.join(ROOT, ".cache", "minio", "bin", "minio"),
                 os.path.expanduser("~/.cache/sluice/minio-bin/minio")):
        if os.path.exists(cand):
            return cand
    return None


class MinioServer(S3Server):
    """MinIO on 127.0.0.1:<free port> over `root` (opt-in for the benchmarks:
    SLUICE_BENCH_S3=minio). s3s-fs serves ~200 MB/s per connection here, so
    large objects measure the server; MinIO serves GB/s. Its objects cannot
    be laid into a directory: put() queues files and start() uploads them
    with boto3, skipping objects already there with the same size."""

    def __init__(self, root: str):
        super().__init__(root)
        self.queued: list = []

    def put(self, path: str, key: Optional[str] = None) -> str:
        key = key or os.path.basename(path)
        self.queued.append((path, key))
        return self.url(key)

    def start(self) -> "MinioServer":
        exe = minio_binary()
        if exe is None:
            raise RuntimeError("MinIO not built (bench/install_minio.sh builds it)")
        self.port = free_port()
        data = os.path.join(self.root, "minio-data")
        os.makedirs(data, exist_ok=True)
        self.log = open(os.path.join(self.root, "server.log"), "wb")
        env = dict(os.environ, MINIO_ROOT_USER=ACCESS_KEY, MINIO_ROOT_PASSWORD=SECRET_KEY,
                   MINIO_BROWSER="off")
        self.proc = subprocess.Popen([exe, "server", data, "--address", f"127.0.0.1:{self.port}",
                                      "--console-address", f"127.0.0.1:{free_port()}"],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env)
        if not wait_port(self.port, self.proc):
            self.stop()
            raise RuntimeError("MinIO did not start; see " + os.path.join(self.root, "server.log"))
        import boto3  # the smart_open peer's dependency
        client = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                              aws_secret_access_key=SECRET_KEY, region_name=REGION)
        for attempt in range(50):  # MinIO answers on its port before it serves requests
            try:
                client.list_buckets()
                break
            except Exception:
                time.sleep(0.2)
        try:
            client.create_bucket(Bucket=BUCKET)
        except client.exceptions.BucketAlreadyOwnedByYou:
            pass
        for path, key in self.queued:
            try:
                if client.head_object(Bucket=BUCKET, Key=key)["ContentLength"] == \
                        os.path.getsize(path):
                    continue
            except Exception:
                pass
            client.upload_file(path, BUCKET, key)
        return self


def server_for(root: str) -> S3Server:
    """The benchmark's S3 server: s3s-fs, or MinIO with SLUICE_BENCH_S3=minio."""
    if os.environ.get("SLUICE_BENCH_S3", "s3s-fs") == "minio":
        return MinioServer(root)
    return S3Server(root)


class CountingProxy:
    """HTTP/1.1 reverse proxy on 127.0.0.1:<free port> to `upstream_port`.
    Counts requests and response body bytes (what the client fetched)."""

    HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"}

    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.lock = threading.Lock()
        self.requests: list = []  # (method, path, range header, body bytes)
        local = threading.local()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def _forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                conn = getattr(local, "conn", None)
                if conn is None:
                    conn = local.conn = http.client.HTTPConnection("127.0.0.1",
                                                                   proxy.upstream_port)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("connection", "proxy-connection", "keep-alive")}
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                except (OSError, http.client.HTTPException):
                    conn.close()
                    local.conn = None
                    self.send_error(502)
                    return
                self.send_response_only(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in proxy.HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)) if self.command != "HEAD"
                                 else resp.getheader("Content-Length", "0"))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                with proxy.lock:
                    proxy.requests.append((self.command, self.path, self.headers.get("Range"),
                                           0 if self.command == "HEAD" else len(data)))

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "CountingProxy":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fetched_bytes(self) -> int:
        with self.lock:
            return sum(r[3] for r in self.requests)
