"""storage_options={...} for s3:// in sluice.read / scan / schema / write:
the keys pandas, polars and pyarrow users spell, seen in the requests a
recording server gets (it does not check signatures: the CLI's tests in
tests/py/test_s3.py read and write through s3s-fs, which does)."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import sluice


class Recorder(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.objects = {"/b/k.csv": b"a,b\n1,x\n2,y\n", "/k.csv": b"a,b\n1,x\n2,y\n"}
        self.requests = []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _answer(self, body):
        self.server.requests.append({"method": self.command, "path": self.path,
                                     "headers": {k.lower(): v for k, v in self.headers.items()}})
        data = self.server.objects.get(self.path)
        if data is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", '"e"')
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_GET(self):
        self._answer(True)

    def do_HEAD(self):
        self._answer(False)


@pytest.fixture
def server(monkeypatch, tmp_path):
    for k in list(__import__("os").environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws files
    srv = Recorder()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def endpoint(srv, host="127.0.0.1"):
    return "http://%s:%d" % (host, srv.server_address[1])


def test_keys_region_and_endpoint(server):
    opts = {"aws_access_key_id": "AKIDX", "aws_secret_access_key": "s",
            "aws_session_token": "tok", "aws_region": "eu-north-1",
            "endpoint_url": endpoint(server)}
    t = sluice.read("s3://b/k.csv", storage_options=opts)
    assert t.to_pydict() == {"a": [1, 2], "b": ["x", "y"]}
    heads = [r["headers"] for r in server.requests]
    assert heads and all(h["authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDX/") and "/eu-north-1/s3/aws4_request" in h["authorization"]
        and h["x-amz-security-token"] == "tok" for h in heads), heads
    # The s3fs spellings, in sluice.schema too.
    server.requests.clear()
    s = sluice.schema("s3://b/k.csv", storage_options={"key": "K2", "secret": "s",
                                                       "endpoint_url": endpoint(server)})
    assert [f.name for f in s] == ["a", "b"]
    assert all("Credential=K2/" in r["headers"]["authorization"] for r in server.requests)


def test_anonymous_and_virtual_addressing(server, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ENVKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    t = sluice.read("s3://b/k.csv", storage_options={
        "anon": True, "endpoint_url": endpoint(server, "localhost"),
        "force_virtual_addressing": True})
    assert t.num_rows == 2
    assert server.requests
    for r in server.requests:
        assert "authorization" not in r["headers"]  # unsigned, despite the environment
        assert r["path"] == "/k.csv" and r["headers"]["host"].startswith("b.localhost:")
    # Without anon the environment's keys sign the request.
    server.requests.clear()
    sluice.read("s3://b/k.csv", storage_options={"endpoint_url": endpoint(server)})
    assert all("Credential=ENVKEY/" in r["headers"]["authorization"] for r in server.requests)


def test_bad_storage_options(server):
    with pytest.raises(ValueError, match="unknown storage option 'bogus'"):
        sluice.read("s3://b/k.csv", storage_options={"bogus": 1})
    with pytest.raises(sluice.Error, match="profile 'nope' not found"):
        sluice.read("s3://b/k.csv", storage_options={"profile": "nope",
                                                     "endpoint_url": endpoint(server)})
    with pytest.raises(sluice.Error, match="secret access key"):
        sluice.read("s3://b/k.csv", storage_options={"key": "only-the-id",
                                                     "endpoint_url": endpoint(server)})
