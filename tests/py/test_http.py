"""HTTP(S) sources against real servers started by the tests on loopback.

- nginx (Debian's) over TLS with a self-signed certificate made with openssl
  at test time: every format is read through https:// with --ca-bundle and
  compared with sluice's read of the same local file; small readahead parts
  (SLUICE_HTTP_PART_SIZE) force reads across part boundaries; --insecure
  works; no CA, a wrong CA and a missing object give clear errors.
- A small Python HTTP server with Range support and injected faults: 503s
  (retried), connections cut mid-body (resumed from the last byte), an
  object replaced mid-read (If-Match -> 412 -> error), a server without
  Range support (read as one forward stream).
"""

from __future__ import annotations

import email.utils
import gzip
import http.server
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pytest

from conftest import check_clean_failure, corpora_dir
from servers import free_port, silent_server, wait_for_port

CORPORA = corpora_dir()


def make_cert(directory: Path, name: str) -> tuple[Path, Path]:
    key, cert = directory / f"{name}.key", directory / f"{name}.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "2", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return key, cert


def write_lenprefix(path: Path, count: int, seed: int) -> None:
    rng = random.Random(seed)
    with open(path, "wb") as f:
        for _ in range(count):
            m = rng.randbytes(rng.randrange(0, 48))
            f.write(bytes([len(m)]) + m)


def make_files(www: Path, n: int = 200_000) -> dict[str, list[str]]:
    """Files in `www` -> extra sluice arguments to read them."""
    table = pa.table({"id": pa.array(range(n), pa.int64()),
                      "name": [f"row-{i}" for i in range(n)],
                      "x": [i * 0.5 for i in range(n)]})
    pacsv.write_csv(table, www / "t.csv")
    with ipc.new_file(www / "t.arrow", table.schema) as w:
        w.write_table(table, max_chunksize=30_000)
    with ipc.new_stream(www / "t.arrows", table.schema) as w:
        w.write_table(table, max_chunksize=30_000)
    write_lenprefix(www / "m.lenprefix", n + n // 2, 7)
    files = {"t.csv": [], "t.arrow": [], "t.arrows": [], "m.lenprefix": ["-O", "length_prefix=u8"]}
    for rel, fmt in [
        ("arrow-testing/data/avro/alltypes_plain.avro", None),
        ("arrow-testing/data/avro/alltypes_plain.zstandard.avro", None),
        ("arrow-testing/data/arrow-ipc-stream/integration/1.0.0-littleendian/"
         "generated_primitive.arrow_file", "arrow"),
        ("arrow-testing/data/arrow-ipc-stream/integration/1.0.0-littleendian/"
         "generated_primitive.stream", "arrows"),
        ("arrow-testing/data/csv/aggregate_test_100.csv", None),
        ("parquet-testing/data/alltypes_plain.parquet", None),
    ]:
        src = CORPORA / rel
        if src.exists():
            shutil.copy(src, www / src.name)
            files[src.name] = ["-f", fmt] if fmt else []
    return files


def read_table(sluice, location: str, out: Path, extra, env=None) -> pa.Table:
    proc = subprocess.run([sluice.binary, "convert", location, str(out), "-t", "arrows", "-q",
                           *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                          env=env)
    assert proc.returncode == 0, f"{location}: {proc.stderr.decode()}"
    return ipc.open_stream(out.read_bytes()).read_all()


def local_table(sluice, path: Path, out: Path, extra) -> pa.Table | None:
    """sluice's read of the local file; None when sluice cannot read it
    locally (a format not linked in yet): then there is nothing to compare."""
    proc = subprocess.run([sluice.binary, "convert", str(path), str(out), "-t", "arrows", "-q",
                           *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if proc.returncode != 0:
        return None
    return ipc.open_stream(out.read_bytes()).read_all()


def start_nginx_tls(root: Path, port: int, cert: Path, key: Path, server_body: str):
    """Debian's nginx on 127.0.0.1:port over TLS (cert/key), one server whose
    directives are `server_body`, all its files under `root`."""
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    for d in ("logs", "tmp"):
        (root / d).mkdir(exist_ok=True)
    user = "user root;" if os.geteuid() == 0 else ""
    conf = root / "nginx.conf"
    conf.write_text(f"""
daemon off;
master_process off;
{user}
pid {root}/nginx.pid;
error_log {root}/logs/error.log;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {root}/tmp/body;
  proxy_temp_path {root}/tmp/proxy;
  fastcgi_temp_path {root}/tmp/fastcgi;
  uwsgi_temp_path {root}/tmp/uwsgi;
  scgi_temp_path {root}/tmp/scgi;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    {server_body}
  }}
}}
""")
    proc = subprocess.Popen([nginx_bin, "-c", str(conf), "-p", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for_port(port, proc, "nginx")
    return proc


# ---- nginx over TLS ------------------------------------------------------------


@pytest.fixture(scope="module")
def nginx(tmp_path_factory):
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (scripts/setup.sh installs nginx-light)")
    root = tmp_path_factory.mktemp("nginx")
    www = root / "www"
    www.mkdir()
    key, cert = make_cert(root, "server")
    _, other_cert = make_cert(root, "other")
    files = make_files(www)
    port = free_port()
    proc = start_nginx_tls(root, port, cert, key, f"root {www};")
    yield {"url": f"https://localhost:{port}", "cert": cert, "other_cert": other_cert,
           "www": www, "files": files}
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_every_format_over_https(sluice, nginx, tmp_path):
    compared = set()
    for name, extra in nginx["files"].items():
        local = local_table(sluice, nginx["www"] / name, tmp_path / "l.arrows", extra)
        if local is None:
            continue
        compared.add(name)
        remote = read_table(sluice, f"{nginx['url']}/{name}", tmp_path / "r.arrows",
                            [*extra, "--ca-bundle", str(nginx["cert"])])
        assert remote.equals(local), name
    assert {"t.csv", "t.arrow", "t.arrows", "m.lenprefix"} <= compared


@pytest.mark.parametrize("part_size", [1000, 4093, 65536])
def test_reads_across_part_boundaries(sluice, nginx, tmp_path, part_size):
    env = dict(os.environ, SLUICE_HTTP_PART_SIZE=str(part_size))
    for name in ("m.lenprefix", "t.arrows", "t.csv"):
        extra = nginx["files"][name]
        local = local_table(sluice, nginx["www"] / name, tmp_path / "l.arrows", extra)
        remote = read_table(sluice, f"{nginx['url']}/{name}", tmp_path / "r.arrows",
                            [*extra, "--ca-bundle", str(nginx["cert"])], env=env)
        assert remote.equals(local), (name, part_size)


def test_insecure_skips_verification(sluice, nginx, tmp_path):
    local = local_table(sluice, nginx["www"] / "t.arrows", tmp_path / "l.arrows", [])
    remote = read_table(sluice, f"{nginx['url']}/t.arrows", tmp_path / "r.arrows", ["--insecure"])
    assert remote.equals(local)


def test_untrusted_certificate_is_a_clear_tls_error(sluice, nginx, tmp_path):
    for extra in ([], ["--ca-bundle", str(nginx["other_cert"])]):
        proc = sluice.run_raw("schema", f"{nginx['url']}/t.csv", *extra)
        check_clean_failure(proc)
        err = proc.stderr.decode()
        assert "TLS" in err and "certificate" in err and "--ca-bundle" in err and "ca_bundle=FILE" in err, err


def test_missing_ca_bundle_file(sluice, nginx, tmp_path):
    proc = sluice.run_raw("schema", f"{nginx['url']}/t.csv", "--ca-bundle",
                          str(tmp_path / "absent.pem"))
    check_clean_failure(proc)
    assert "TLS" in proc.stderr.decode()


def test_missing_object_is_not_found(sluice, nginx):
    proc = sluice.run_raw("schema", f"{nginx['url']}/absent.csv", "--ca-bundle",
                          str(nginx["cert"]))
    check_clean_failure(proc)
    assert "404" in proc.stderr.decode() and "not found" in proc.stderr.decode()


# ---- A Range server with injected faults ------------------------------------------


class FaultServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, www: Path):
        super().__init__(("127.0.0.1", 0), FaultHandler)
        self.www = www
        self.lock = threading.Lock()
        self.requests = 0
        self.generation = 0
        self.log: list[tuple[str, str | None]] = []  # (method, Range header) per request
        self.conditions: list[tuple[str | None, str | None]] = []  # (If-Match, If-Unmodified-Since)
        self.cut_done = False
        self.accept_encodings: list[str | None] = []
        self.times: list[float] = []  # when each request came (time.monotonic)
        self.stalled = False
        self.redirect_to = ""  # where mode elsewhere redirects
        # Faults are dealt per request, not by the server's request count: with
        # concurrent clients a global "every other request fails" can land all of
        # one request's retries on failing turns.
        self.tries: dict[tuple, int] = {}


class FaultHandler(http.server.BaseHTTPRequestHandler):
    """Paths are /MODE/FILE. Modes: ok, flaky (the first try of every request,
    by method and Range, is a 503; the retry succeeds), cut (the first body sent
    for every range end stops halfway and the connection closes; the resumed
    request succeeds), norange (Range and
    Accept-Ranges unsupported), changing / changed (the ETag changes after 3
    requests / after 1; If-Match is honoured; changing serves slowly), down (always 503),
    region (400 with S3's wrong-region error in the body, as AWS answers a request
    signed for another region), nohead (as flaky, and every HEAD is refused with
    403, as a presigned GET URL refuses one). Objects replaced after the first
    request on servers without an ETag: lmchanged (only Last-Modified, which
    changes; If-Unmodified-Since is ignored, as Python's http.server ignores
    it), grown (neither validator; the object grows by a row), norangecutlm
    (no Range, Last-Modified only; the first GET without a Range breaks off
    halfway, and the object is replaced then); longetag (a 300-byte ETag,
    which changes). Servers without Range whose HEAD is refused (norange405,
    a 405) or lies (norangelie: a Content-Length of 1000); nototal405 answers
    ranges with an unknown total ("bytes 0-9/*") and refuses HEAD. Objects
    stored compressed, served with Content-Encoding: gzip whatever the
    request asked, as S3 serves such objects: gzipped (the file, gzipped
    whole; ranges are of those bytes), cestored (the file as it is, a .gz
    one labelled so), gzipafter (the first answer plain, later ones as
    gzipped), ceplain (the file as it is, plain, labelled gzip all the same:
    metadata set wrong), gzmembers (the file as three gzip members back to back, as
    `cat a.gz b.gz c.gz` writes them), cecut (gzmembers, and the first GET
    without a Range breaks off halfway), zstframes (three zstd frames,
    Content-Encoding: zstd). A URL's query is not part of the file's name.
    Redirects that cannot be followed: loop (302 to itself),
    tofile (302 to file:///etc/passwd), noloc (302 without a Location);
    elsewhere: 302 to the server's redirect_to (a test sets it).
    stall: the first GET of more than 100,000 bytes sends those and then
    nothing for 30 s. retryafter: as flaky, each 503 with Retry-After: 2.
    retrylong: every request a 429 with Retry-After: 3600.
    norangestall: as norange, and a GET of more than 1,200,000 bytes sends
    those (the CSV sample, 1 MiB + 64 KiB, and some) and then nothing for 30 s.
    cappednohead: as capped, and every HEAD refused with a 403; suffix416:
    a suffix range answered with a 416 and "bytes */SIZE", HEAD refused too."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _serve(self, body: bool):
        srv: FaultServer = self.server
        parts = self.path.split("?", 1)[0].lstrip("/").split("/", 1)
        if len(parts) != 2 or not (srv.www / parts[1]).is_file():
            self.send_error(404)
            return
        mode, name = parts
        data = (srv.www / name).read_bytes()
        with srv.lock:
            srv.requests += 1
            rng = self.headers.get("Range")
            srv.log.append((self.command, rng))
            srv.times.append(time.monotonic())
            n = srv.requests
            flaky_try = srv.tries[("flaky", self.command, name, rng)] = \
                srv.tries.get(("flaky", self.command, name, rng), 0) + 1
            range_end = rng.split("-", 1)[1] if rng else ""  # a resumed GET keeps its end
            cut_try = srv.tries[("cut", self.command, name, range_end)] = \
                srv.tries.get(("cut", self.command, name, range_end), 0) + 1
            if (mode == "changing" and n > 3) or (mode == "changed" and n > 1):
                srv.generation = 1
            if (mode in ("lmchanged", "grown", "longetag") and n > 1) or \
                    (mode == "norangecutlm" and srv.cut_done):
                srv.generation = 1
            etag = f'"{name}-{srv.generation}"'
            if mode == "longetag":
                etag = f'"{"e" * 300}-{srv.generation}"'
            srv.conditions.append((self.headers.get("If-Match"),
                                   self.headers.get("If-Unmodified-Since")))
            srv.accept_encodings.append(self.headers.get("Accept-Encoding"))
            served = srv.tries[("served", mode, name)] = \
                srv.tries.get(("served", mode, name), 0) + 1
            coded = mode in ("gzipped", "cestored", "gzmembers", "cecut", "zstframes",
                             "ceplain") or \
                (mode == "gzipafter" and served > 1)
        norange = mode in ("norange", "norangecutlm", "norange405", "norangelie",
                           "norangestall")
        no_etag = mode in ("norange", "lmchanged", "grown", "norangecutlm", "norange405",
                           "norangelie")
        if mode in ("norange405", "norangelie", "nototal405") and self.command == "HEAD":
            self.send_response(200 if mode == "norangelie" else 405)
            self.send_header("Content-Length", "0" if mode == "norange405" else "1000")
            self.end_headers()
            return
        modified = email.utils.formatdate(1_700_000_000 + 3600 * srv.generation, usegmt=True)
        if mode == "grown" and srv.generation:
            data += data[-20:]
        if mode in ("gzipped", "gzipafter") and coded:
            data = gzip.compress(data, compresslevel=1, mtime=0)
        thirds = [data[:len(data) // 3], data[len(data) // 3:len(data) * 2 // 3],
                  data[len(data) * 2 // 3:]]
        if mode in ("gzmembers", "cecut"):
            data = b"".join(gzip.compress(t, compresslevel=1, mtime=0) for t in thirds)
        if mode == "zstframes":
            import zstandard
            data = b"".join(zstandard.ZstdCompressor().compress(t) for t in thirds)
        if mode in ("loop", "tofile", "noloc", "elsewhere"):
            self.send_response(302)
            if mode != "noloc":
                self.send_header("Location", {"loop": self.path, "tofile": "file:///etc/passwd",
                                              "elsewhere": srv.redirect_to}[mode])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "region" or (mode in ("nohead", "cappednohead", "suffix416") and
                                self.command == "HEAD"):
            body_text = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>"
                         b"AuthorizationHeaderMalformed</Code><Message>the region 'us-east-1' "
                         b"is wrong; expecting 'eu-west-1'</Message></Error>")
            self.send_response(400 if mode == "region" else 403)
            self.send_header("Content-Length", str(len(body_text)))
            self.end_headers()
            if body:
                self.wfile.write(body_text)
            return
        if mode == "retrylong":
            self.send_response(429)
            self.send_header("Retry-After", "3600")
            self.send_header("Content-Length", "4")
            self.end_headers()
            if body:
                self.wfile.write(b"busy")
            return
        if mode == "down" or (mode in ("flaky", "nohead", "retryafter") and flaky_try % 2 == 1):
            self.send_response(503)
            if mode == "retryafter":
                self.send_header("Retry-After", "2")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if_match = self.headers.get("If-Match")
        if mode in ("changing", "changed") and if_match is not None and if_match != etag:
            self.send_response(412)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start, end, status = 0, len(data) - 1, 200
        if rng and not norange:
            a, b = rng.split("=", 1)[1].split("-")
            if a:
                start = int(a)
                end = min(int(b), len(data) - 1) if b else len(data) - 1
            elif mode == "suffix416":  # as some servers answer a suffix range
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            else:  # a suffix: the last b bytes
                start, end = max(0, len(data) - int(b)), len(data) - 1
            status = 206
            if mode in ("capped", "cappednohead"):  # at most 50,000 bytes, as some servers cap
                end = min(end, start + 49_999)
        chunk = data[start:end + 1]
        self.send_response(status)
        self.send_header("Content-Length", str(len(chunk)))
        if not norange:
            self.send_header("Accept-Ranges", "bytes")
        if not no_etag:
            self.send_header("ETag", etag)
        if mode in ("lmchanged", "norangecutlm"):
            self.send_header("Last-Modified", modified)
        if coded:
            self.send_header("Content-Encoding", "zstd" if mode == "zstframes" else "gzip")
        if status == 206:
            total = "*" if mode == "nototal405" else len(data)
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
        self.end_headers()
        if not body:
            return
        if mode == "stall" and self.command == "GET" and len(chunk) > 100_000 and not srv.stalled:
            srv.stalled = True
            self.wfile.write(chunk[:100_000])
            self.wfile.flush()
            time.sleep(30)
            return
        if mode == "norangestall" and self.command == "GET" and len(chunk) > 1_200_000:
            self.wfile.write(chunk[:1_200_000])
            self.wfile.flush()
            time.sleep(30)
            return
        if mode == "norangecutlm" and rng is None and not srv.cut_done:
            srv.cut_done = True
            self.wfile.write(chunk[:len(chunk) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if (mode == "cut" or (mode == "cecut" and rng is None)) and len(chunk) > 1 and \
                cut_try % 2 == 1:
            self.wfile.write(chunk[:len(chunk) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if mode == "changing":  # slowly (6.5 MB/s), so that parallel GETs join in
            for at in range(0, len(chunk), 65536):
                self.wfile.write(chunk[at:at + 65536])
                time.sleep(0.01)
            return
        self.wfile.write(chunk)

    def do_HEAD(self):
        self._serve(False)

    def do_GET(self):
        self._serve(True)


@pytest.fixture
def fault_server(tmp_path):
    www = tmp_path / "www"
    www.mkdir()
    files = make_files(www, 40_000)
    srv = FaultServer(www)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield {"url": f"http://127.0.0.1:{srv.server_address[1]}", "www": www, "files": files,
           "server": srv}
    srv.shutdown()
    srv.server_close()


SMALL_PARTS = dict(os.environ, SLUICE_HTTP_PART_SIZE="65536")


# Every link "slow": the readahead's one streaming GET gets helpers at once.
SLOW_LINK = dict(SMALL_PARTS, SLUICE_HTTP_FAST_LINK=str(1 << 40))


@pytest.mark.parametrize("link", ["fast", "slow"])
@pytest.mark.parametrize("mode", ["ok", "flaky", "cut", "capped"])
def test_faults_are_retried_and_resumed(sluice, fault_server, tmp_path, mode, link):
    """Broken transfers resume from their last byte; a server that answers a
    range with fewer bytes than asked (a 206 with a shorter Content-Range) is
    asked for the rest, however many answers that takes."""
    for name in ("t.arrows", "t.arrow", "m.lenprefix", "t.csv"):
        extra = fault_server["files"][name]
        local = local_table(sluice, fault_server["www"] / name, tmp_path / "l.arrows", extra)
        remote = read_table(sluice, f"{fault_server['url']}/{mode}/{name}", tmp_path / "r.arrows",
                            extra, env=SMALL_PARTS if link == "fast" else SLOW_LINK)
        assert remote.equals(local), (mode, name)


@pytest.mark.parametrize("mode", ["cappednohead", "suffix416"])
def test_opening_answer_with_a_size_needs_no_head(sluice, fault_server, tmp_path, mode):
    """The opening GET answered with fewer bytes than asked (a server that
    caps each answer, the Content-Range right), or a suffix range answered
    with a 416 and "bytes */SIZE": the size is the Content-Range's, and the
    rest is asked for by range, with no HEAD (presigned GET URLs refuse
    one). Both fell back to a HEAD, and its 403 failed the read."""
    import pyarrow.parquet as pq
    srv = fault_server["server"]
    www = fault_server["www"]
    pq.write_table(ipc.open_file(www / "t.arrow").read_all(), www / "t.parquet")
    # (-f parquet: a footer format named opens by a suffix range, its end)
    for name, extra in (("t.csv", []), ("t.arrow", []), ("t.parquet", ["-f", "parquet"])):
        local = local_table(sluice, www / name, tmp_path / "l.arrows", extra)
        before = len(srv.log)
        remote = read_table(sluice, f"{fault_server['url']}/{mode}/{name}", tmp_path / "r.arrows",
                            extra)
        assert remote.equals(local), name
        assert "HEAD" not in [m for m, _ in srv.log[before:]], srv.log[before:]


def test_stream_format_opens_by_its_download(sluice, fault_server, tmp_path):
    """A length-delimited object or an Arrow IPC stream (by its name, or
    named with -f) is opened by its download: one GET of bytes=0-, which
    goes on while the reader opens, where a GET of its first 64 KiB came
    first. The values are the local file's; faults and servers without
    ranges are read the usual way (test_faults_are_retried_and_resumed,
    ..._without_range_support_...)."""
    srv = fault_server["server"]
    for name, fmt in (("m.lenprefix", "lenprefix"), ("t.arrows", "arrows")):
        extra = fault_server["files"][name]
        local = local_table(sluice, fault_server["www"] / name, tmp_path / "l.arrows", extra)
        for args in (["-f", fmt, *extra], extra):
            before = len(srv.log)
            remote = read_table(sluice, f"{fault_server['url']}/ok/{name}", tmp_path / "r.arrows",
                                args)
            assert remote.equals(local), args
            assert srv.log[before:] == [("GET", "bytes=0-")], (args, srv.log[before:])


def test_server_without_range_support_is_streamed(sluice, fault_server, tmp_path):
    # t.arrow has a footer: the stream is spooled to a temporary file first.
    for name in ("t.arrows", "m.lenprefix", "t.csv", "t.arrow"):
        extra = fault_server["files"][name]
        local = local_table(sluice, fault_server["www"] / name, tmp_path / "l.arrows", extra)
        remote = read_table(sluice, f"{fault_server['url']}/norange/{name}",
                            tmp_path / "r.arrows", extra, env=SMALL_PARTS)
        assert remote.equals(local), name


def test_a_spool_that_cannot_be_made_names_its_directory(sluice, fault_server, tmp_path):
    missing = tmp_path / "no such dir"
    proc = subprocess.run([sluice.binary, "cat", f"{fault_server['url']}/norange/t.arrow"],
                          capture_output=True, env={**os.environ, "TMPDIR": str(missing)})
    assert proc.returncode == 1
    assert f"cannot create a temporary file to spool into in {missing} (TMPDIR sets the " \
        "directory)" in proc.stderr.decode()


@pytest.mark.parametrize("mode", ["norange405", "norangelie", "nototal405"])
def test_server_without_range_support_needs_no_head(sluice, fault_server, tmp_path, mode):
    """A server that ignores Range answers the opening GET with a 200: its
    Content-Length is the size and the object is read as one stream (Arrow
    IPC and Parquet files spooled), with no HEAD, so a HEAD refused with a
    405 or answered with a wrong length does not matter (both failed every
    read). A HEAD still asked (a 206 that gave no size) and refused reads
    the object as one stream of unknown size. The values are the local
    file's, as pandas reads them."""
    import pyarrow.parquet as pq
    www, srv = fault_server["www"], fault_server["server"]
    pq.write_table(pacsv.read_csv(www / "t.csv"), www / "t.parquet", row_group_size=10_000)
    for name in ("t.csv", "t.arrows", "t.arrow", "m.lenprefix", "t.parquet"):
        extra = fault_server["files"].get(name, [])
        local = local_table(sluice, www / name, tmp_path / "l.arrows", extra)
        srv.log.clear()
        remote = read_table(sluice, f"{fault_server['url']}/{mode}/{name}", tmp_path / "r.arrows",
                            extra, env=SMALL_PARTS)
        assert remote.equals(local), (mode, name)
        if mode != "nototal405":
            assert all(m == "GET" for m, _ in srv.log), srv.log


def test_objects_stored_with_a_content_encoding(sluice, fault_server, tmp_path):
    """An object stored gzipped and served with Content-Encoding: gzip (S3
    serves its Content-Encoding metadata whatever was asked) is read as one
    stream that libcurl decodes, as pandas (fsspec) reads it: Parquet and
    Arrow IPC files (spooled), Avro and CSV, and a .csv.gz labelled so. It
    was the format's error ("not a Parquet file (no PAR1 magic)"). Only that
    stream's GET sends an Accept-Encoding. A ranged answer that comes
    encoded when the first did not is an error that names the coding."""
    import pyarrow.parquet as pq
    www, srv, url = fault_server["www"], fault_server["server"], fault_server["url"]
    pq.write_table(pacsv.read_csv(www / "t.csv"), www / "t.parquet", row_group_size=10_000)
    (www / "t.csv.gz").write_bytes(gzip.compress((www / "t.csv").read_bytes()))
    names = ["t.parquet", "t.arrow", "t.arrows", "t.csv"] + \
        [n for n in ("alltypes_plain.avro",) if (www / n).exists()]
    for name in names:
        extra = fault_server["files"].get(name, [])
        local = local_table(sluice, www / name, tmp_path / "l.arrows", extra)
        srv.accept_encodings.clear()
        remote = read_table(sluice, f"{url}/gzipped/{name}", tmp_path / "r.arrows", extra)
        assert remote.equals(local), name
        asked = [a for a in srv.accept_encodings if a is not None]
        assert asked == ["gzip"], (name, srv.accept_encodings)
    local = local_table(sluice, www / "t.csv", tmp_path / "l.arrows", [])
    assert read_table(sluice, f"{url}/cestored/t.csv.gz", tmp_path / "r.arrows", []).equals(local)
    # Plain bytes labelled gzip (metadata set wrong) read as they are, as
    # pyarrow reads them (it was "corrupt gzip data").
    for name in ("t.parquet", "t.csv"):
        local = local_table(sluice, www / name, tmp_path / "l.arrows", [])
        assert read_table(sluice, f"{url}/ceplain/{name}", tmp_path / "r.arrows", []).equals(
            local), name
    proc = subprocess.run([sluice.binary, "convert", f"{url}/gzipafter/t.parquet",
                           str(tmp_path / "o.arrows"), "-t", "arrows", "-q"],
                          capture_output=True, timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "Content-Encoding: gzip" in err and "/gzipafter/t.parquet" in err, err


def test_content_encoding_of_many_gzip_members(sluice, fault_server, tmp_path):
    """A body sent with Content-Encoding: gzip in several members (a .csv.gz
    written by `cat a.gz b.gz`, stored with that header as S3 serves it; a
    server that gzips in members) is read whole, as pandas reads it, and so
    is one of several zstd frames: sluice inflates the body, where libcurl's
    gzip decoder stopped after the first member and the read failed with
    "Failed writing received data to disk/application". A CSV, a Parquet
    file (spooled), lenprefix records (plain and named .ldr.gz), a
    .csv.gz/.tsv.gz stored so, a query after the name, and a GET that
    breaks off halfway and is resumed from the start."""
    pd = pytest.importorskip("pandas")
    import pyarrow.parquet as pq
    www, srv, url = fault_server["www"], fault_server["server"], fault_server["url"]
    pq.write_table(pacsv.read_csv(www / "t.csv"), www / "t.parquet", row_group_size=10_000)
    csv_bytes = (www / "t.csv").read_bytes()
    third = len(csv_bytes) // 3
    shutil.copy(www / "t.csv", www / "c.csv")  # (cut once per name)
    (www / "m3.csv.gz").write_bytes(b"".join(
        gzip.compress(csv_bytes[a:b]) for a, b in ((0, third), (third, 2 * third),
                                                    (2 * third, len(csv_bytes)))))
    lp = (www / "m.lenprefix").read_bytes()
    (www / "m.ldr.gz").write_bytes(gzip.compress(lp[:1000]) + gzip.compress(lp[1000:]))
    (www / "m.tsv").write_bytes(csv_bytes.replace(b",", b"\t"))
    (www / "m.tsv.gz").write_bytes(gzip.compress(csv_bytes[:third].replace(b",", b"\t")) +
                                   gzip.compress(csv_bytes[third:].replace(b",", b"\t")))
    local_csv = local_table(sluice, www / "t.csv", tmp_path / "l.arrows", [])
    lp_args = ["-O", "length_prefix=u8"]
    local_lp = local_table(sluice, www / "m.lenprefix", tmp_path / "l.arrows", lp_args)
    cases = [("gzmembers/t.csv", local_csv, []), ("cecut/c.csv", local_csv, []),
             ("gzmembers/t.csv?v=1", local_csv, []), ("cestored/m3.csv.gz", local_csv, []),
             ("cestored/m.tsv.gz", local_csv, []), ("gzmembers/m.tsv", local_csv, []),
             ("zstframes/t.csv", local_csv, []),
             ("gzmembers/m.lenprefix", local_lp, lp_args), ("cestored/m.ldr.gz", local_lp, lp_args),
             ("gzmembers/t.parquet", local_csv, [])]
    for path, local, extra in cases:
        srv.accept_encodings.clear()
        srv.log.clear()
        remote = read_table(sluice, f"{url}/{path}", tmp_path / "r.arrows", extra)
        assert remote.equals(local), path
        if path.startswith("cecut"):  # broken off once, then read again from the start
            assert [r for m, r in srv.log if m == "GET" and r is None] == [None, None], srv.log
        want = "zstd" if path.startswith("zstframes") else "gzip"
        gets = 2 if path.startswith("cecut") else 1  # (only the stream's GETs ask)
        assert [a for a in srv.accept_encodings if a is not None] == [want] * gets, \
            (path, srv.accept_encodings)
    # pandas (urllib, Python's gzip) reads the same rows.
    frame = pd.read_csv(f"{url}/gzmembers/t.csv")
    assert len(frame) == local_csv.num_rows and frame["id"].tolist() == \
        local_csv.column("id").to_pylist()


def test_tsv_url_with_a_query_reads_with_tabs(sluice, fault_server, tmp_path):
    """http://h/x.tsv?v=1 is read with tab as its delimiter, as http://h/x.tsv
    and the local file are (and as pyarrow reads it with delimiter tab): the
    query hid the name's .tsv, the delimiter was sniffed, and rows like
    `1,1<TAB>1` split at the comma."""
    www, url = fault_server["www"], fault_server["url"]
    data = ("a,b\tc\n" + "".join(f"{i},{i}\t{i}\n" for i in range(50))).encode()
    (www / "amb.tsv").write_bytes(data)
    (www / "amb.tsv.gz").write_bytes(gzip.compress(data))
    want = pacsv.read_csv(www / "amb.tsv", parse_options=pacsv.ParseOptions(delimiter="\t"))
    assert local_table(sluice, www / "amb.tsv", tmp_path / "l.arrows", []).equals(want)
    for path in ("ok/amb.tsv", "ok/amb.tsv?v=1", "ok/amb.tsv.gz?v=1#top", "norange/amb.tsv?v=1"):
        got = read_table(sluice, f"{url}/{path}", tmp_path / "r.arrows", [])
        assert got.equals(want), (path, got.column_names)


def test_avro_splits_read_their_ranges_in_one_request(sluice, fault_server, tmp_path):
    """An Avro file of many small blocks splits by byte range; each split
    fetches its bytes in one GET (not one per block), through faults too, and
    a server without ranges streams it: the same values every way."""
    fastavro = pytest.importorskip("fastavro")
    name = "many_blocks.avro"
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"}, {"name": "s", "type": "string"},
        {"name": "x", "type": ["null", "double"]}]}
    rows = [{"id": i, "s": f"row{i % 1000:04d}", "x": None if i % 13 == 0 else i / 7}
            for i in range(200_000)]
    with open(fault_server["www"] / name, "wb") as f:
        fastavro.writer(f, schema, rows, sync_interval=4096)  # about 900 blocks
    size = (fault_server["www"] / name).stat().st_size
    assert size > 3 << 20  # several 1 MiB splits
    local = local_table(sluice, fault_server["www"] / name, tmp_path / "l.arrows", [])
    assert local.column("id").to_pylist() == list(range(200_000))
    srv = fault_server["server"]
    for mode in ("ok", "flaky", "cut", "norange"):
        before = srv.requests
        remote = read_table(sluice, f"{fault_server['url']}/{mode}/{name}",
                            tmp_path / "r.arrows", [])
        assert remote.equals(local), mode
        if mode == "ok":
            # HEAD, the head and tail edges, one GET per split (4), and a
            # few spare: nowhere near one per block.
            assert srv.requests - before <= 12, srv.requests - before


def test_avro_splits_that_walk_share_their_walks(sluice, fault_server, tmp_path):
    """Every third row holds, in a bytes field, an Avro file written with the
    outer file's sync marker: remote splits that do not believe the marker
    they find walk the blocks from the nearest split whose first block is
    known, a request a block, instead of each from the file's first block
    (the requests grew with the square of the file's size: 53,771 for
    28 MB in 100 KiB splits; 3,067 for this file). The values equal fastavro's."""
    fastavro = pytest.importorskip("fastavro")
    import io
    import random
    sch = {"type": "record", "name": "R", "fields": [{"name": "i", "type": "long"},
                                                     {"name": "b", "type": "bytes"}]}
    sync = bytes(range(16))
    inner = io.BytesIO()
    fastavro.writer(inner, sch, ({"i": -j, "b": b"q" * (j % 50)} for j in range(3000)),
                    sync_marker=sync, sync_interval=1024)
    emb = inner.getvalue()
    rnd = random.Random(7)
    rows = [{"i": i, "b": emb if i % 3 == 0 else emb[rnd.randrange(len(emb) // 2):][:20_000]}
            for i in range(120)]
    name = "marker_copies.avro"
    with open(fault_server["www"] / name, "wb") as f:
        fastavro.writer(f, sch, rows, sync_marker=sync, sync_interval=64 << 10)
    with open(fault_server["www"] / name, "rb") as f:
        want = [r["i"] for r in fastavro.reader(f)]
        f.seek(0)
        blocks = sum(1 for _ in fastavro.block_reader(f))
    srv = fault_server["server"]
    before = srv.requests
    got = read_table(sluice, f"{fault_server['url']}/ok/{name}", tmp_path / "r.arrows",
                     ["-O", "split_size=64k", "--threads", "2", "-c", "i"])
    assert got.column("i").to_pylist() == want
    splits = (fault_server["www"] / name).stat().st_size // (64 << 10) + 1
    # a GET per split, and at most one walk over the blocks between them
    assert srv.requests - before <= splits + 2 * blocks + 8, (srv.requests - before, splits, blocks)


def _quoted_csv(n: int, bad_row: int | None = None) -> str:
    """Rows whose quoted fields hold delimiters, doubled quotes and line feeds,
    so that byte-range splits start inside quotes; `bad_row` has a field too
    many."""
    lines = ["id,text,x"]
    for i in range(n):
        text = f'"v{i}, with ""quotes""\nand a line feed"' if i % 3 == 0 else f"plain{i}"
        extra = ",oops" if i == bad_row else ""
        lines.append(f"{i},{text},{i / 4}{extra}")
    return "\n".join(lines) + "\n"


def test_csv_byte_range_splits_over_http(sluice, fault_server, tmp_path):
    """A remote CSV splits by byte range like a local file (each split one
    request for its range): the same rows as the local read, through faults
    too, and a bad row's error names the same line and byte."""
    www, srv = fault_server["www"], fault_server["server"]
    (www / "q.csv").write_text(_quoted_csv(120_000))
    opts = ["-O", "split_size=256k"]
    local = local_table(sluice, www / "q.csv", tmp_path / "l.arrows", opts)
    assert local.num_rows == 120_000 and local.column("id").to_pylist() == list(range(120_000))
    for mode in ("ok", "flaky", "cut"):
        before = srv.requests
        remote = read_table(sluice, f"{fault_server['url']}/{mode}/q.csv", tmp_path / "r.arrows",
                            [*opts, "--threads", "6"], env=SMALL_PARTS)
        assert remote.equals(local), mode
        if mode == "ok":
            splits = (www / "q.csv").stat().st_size // (256 << 10) + 1
            # the open's edge and sample, then one GET per split: a split
            # that needs an earlier chunk's counts waits for the split
            # fetching it (6 threads fetched 8-11 of the 17 chunks twice)
            assert srv.requests - before <= splits + 4, (srv.requests - before, splits)
    (www / "bad.csv").write_text(_quoted_csv(120_000, bad_row=100_000))
    want = subprocess.run([sluice.binary, "convert", str(www / "bad.csv"), str(tmp_path / "x.arrows"),
                           "-q", *opts], capture_output=True, timeout=120)
    got = subprocess.run([sluice.binary, "convert", f"{fault_server['url']}/ok/bad.csv",
                          str(tmp_path / "y.arrows"), "-q", *opts], capture_output=True,
                         timeout=120)
    assert want.returncode != 0 and got.returncode != 0
    local_msg = want.stderr.decode().split("bad.csv: ", 1)[1]
    assert local_msg.startswith("line ") and local_msg in got.stderr.decode(), (want.stderr, got.stderr)


def test_csv_bare_cr_lines_over_http(sluice, fault_server, tmp_path):
    """A remote CSV whose lines end in a bare CR (classic Mac OS), larger
    than the stream sample and with quoted line feeds, reads as pyarrow.csv
    reads it (it is read whole, then split like a local file)."""
    pcsv = pytest.importorskip("pyarrow.csv")
    www = fault_server["www"]
    text = _quoted_csv(60_000).replace("\n", "\r").replace('feed"\r', 'feed"\r\r')
    text = text.replace("\rand a line", "\nand a line")  # line feeds inside quotes stay
    (www / "mac.csv").write_bytes(text.encode())
    assert len(text) > (1 << 20) + (64 << 10)
    want = pcsv.read_csv(www / "mac.csv", parse_options=pcsv.ParseOptions(newlines_in_values=True))
    assert want.num_rows == 60_000
    for mode in ("ok", "flaky"):
        got = read_table(sluice, f"{fault_server['url']}/{mode}/mac.csv", tmp_path / "r.arrows",
                         ["-O", "split_size=256k", "--threads", "4"], env=SMALL_PARTS)
        assert got.to_pylist() == want.to_pylist(), mode


def test_csv_rows_longer_than_a_splits_tail_over_http(sluice, fault_server, tmp_path):
    """A split fetches its range and 64 KiB past it for the row that crosses
    its end: rows of up to 1.5 MB cross split ends by more than that (and
    quoted line feeds sit inside them), read on through further GETs. The
    values are pyarrow's, from the local file."""
    www = fault_server["www"]
    rng = random.Random(7)
    lines = ["id,text,n"]
    for i in range(40):
        size = rng.choice([10, 3000, 90_000, 300_000, 1_500_000])
        text = "".join(rng.choice("abc ,\n") for _ in range(64)) * (size // 64 + 1)
        lines.append(f'{i},"{text[:size]}",{i * 3}')
    (www / "long.csv").write_text("\n".join(lines) + "\n")
    want = pacsv.read_csv(www / "long.csv", read_options=pacsv.ReadOptions(block_size=4 << 20),
                          parse_options=pacsv.ParseOptions(newlines_in_values=True))
    for mode in ("ok", "flaky"):
        got = read_table(sluice, f"{fault_server['url']}/{mode}/long.csv", tmp_path / "r.arrows",
                         ["-O", "split_size=256k", "--threads", "4"], env=SMALL_PARTS)
        assert got.column("id").to_pylist() == list(range(40)), mode
        for name in ("text", "n"):
            assert got.column(name).to_pylist() == want.column(name).to_pylist(), (mode, name)


def test_csv_max_row_bytes_over_http(sluice, fault_server, tmp_path):
    """max_row_bytes=N over HTTP, in byte-range splits (a row that crosses a
    split's end is copied into a window from its start) and streamed from a
    server without ranges: a row of N bytes (line feed included) reads, one
    of N + 1 is an error naming the object, the row's line and its byte, as
    DuckDB's max_line_size counts (test_csv_options has DuckDB's side)."""
    www = fault_server["www"]
    limit = 2_000_000
    head = "id,text\n" + "".join(f"{i},x\n" for i in range(30_000))
    for size in (limit, limit + 1):
        row = "30000," + "y" * (size - 7) + "\n"
        (www / "rows.csv").write_text(head + row + "30001,z\n")
        for mode in ("ok", "norange"):
            args = ["-O", f"max_row_bytes={limit}", "-O", "split_size=256k", "--threads", "4"]
            url = f"{fault_server['url']}/{mode}/rows.csv"
            if size == limit:
                got = read_table(sluice, url, tmp_path / "r.arrows", args, env=SMALL_PARTS)
                assert got.column("id").to_pylist() == list(range(30_002)), mode
                assert got.column("text")[30_000].as_py() == "y" * (size - 7), mode
            else:
                proc = subprocess.run([sluice.binary, "-q", "stats", url, *args],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                                      env=SMALL_PARTS)
                err = proc.stderr.decode()
                assert proc.returncode == 1, err
                assert f"rows.csv: line 30002 (byte {len(head)}): a row longer than {limit} " \
                       "bytes (the CSV option max_row_bytes" in err, (mode, err)


def test_compressed_csv_streams_over_http(sluice, fault_server, tmp_path):
    """A .csv.gz object is inflated as it downloads (servers with and
    without ranges, through faults): the same rows as the plain local file."""
    import gzip
    www = fault_server["www"]
    text = _quoted_csv(60_000).encode()
    (www / "q.csv").write_bytes(text)
    (www / "q.csv.gz").write_bytes(gzip.compress(text[:777_777], 1) + gzip.compress(text[777_777:], 1))
    local = local_table(sluice, www / "q.csv", tmp_path / "l.arrows", [])
    for mode in ("ok", "flaky", "cut", "norange"):
        remote = read_table(sluice, f"{fault_server['url']}/{mode}/q.csv.gz", tmp_path / "r.arrows",
                            [], env=SMALL_PARTS)
        assert remote.equals(local), mode


def test_open_is_one_ranged_get(sluice, fault_server, tmp_path):
    """Opening a remote object is one GET of its first 64 KiB (the size from
    Content-Range, the bytes kept for format detection), not a HEAD and then
    a GET; a server that ignores Range is read from that GET's 200 (no
    HEAD), and an empty object reads as empty either way."""
    srv, url = fault_server["server"], fault_server["url"]
    alltypes = fault_server["www"] / "alltypes_plain.avro"
    if not alltypes.exists():
        pytest.skip("corpora not found")
    want = sluice.run_raw("schema", str(alltypes), timeout=60)
    assert want.returncode == 0, want.stderr.decode()
    srv.log.clear()
    got = sluice.run_raw("schema", f"{url}/ok/alltypes_plain.avro", timeout=60)
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout == want.stdout
    assert srv.log == [("GET", "bytes=0-65535")], srv.log
    srv.log.clear()
    got = sluice.run_raw("schema", f"{url}/norange/alltypes_plain.avro", timeout=60)
    assert got.returncode == 0 and got.stdout == want.stdout, got.stderr.decode()
    # (its 200 holds the whole object: the schema is read from it)
    assert srv.log == [("GET", "bytes=0-65535")], srv.log
    (fault_server["www"] / "empty.lenprefix").write_bytes(b"")
    for mode in ("ok", "norange"):
        proc = sluice.run_raw("stats", "-f", "lenprefix", f"{url}/{mode}/empty.lenprefix", "--json",
                              timeout=60)
        assert proc.returncode == 0, (mode, proc.stderr.decode())
        assert json.loads(proc.stdout)[0]["count"] == 0, (mode, proc.stdout)


def test_small_objects_are_fetched_whole(sluice, fault_server, tmp_path):
    """An object of at most 256 KiB is read in two requests, the opening GET of
    its first 64 KiB and one for the rest, and every later read (a Parquet
    footer and column chunks, an IPC footer, CSV ranges) comes from memory;
    values equal pyarrow's, also when requests fail or break off."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    srv, url, www = fault_server["server"], fault_server["url"], fault_server["www"]
    n = 5000
    table = pa.table({"id": pa.array(range(n), pa.int64()),
                      "x": [i * 0.5 + 0.25 for i in range(n)],
                      "s": [f"row-{i}" for i in range(n)]})
    pq.write_table(table, www / "small.parquet", compression="none")
    pacsv.write_csv(table, www / "small.csv")
    with pa.ipc.new_file(www / "small.arrow", table.schema) as writer:
        writer.write_table(table)
    for name in ("small.parquet", "small.csv", "small.arrow"):
        size = (www / name).stat().st_size
        assert 65536 < size <= 262144, (name, size)
        for mode in ("ok", "flaky", "cut"):
            srv.log.clear()
            got = read_table(sluice, f"{url}/{mode}/{name}", tmp_path / "r.arrows", [])
            assert got.column_names == table.column_names, (name, mode)
            assert got.to_pylist() == table.to_pylist(), (name, mode)
            if mode == "ok":
                assert srv.log == [("GET", "bytes=0-65535"), ("GET", f"bytes=65536-{size - 1}")], \
                    (name, srv.log)


@pytest.mark.parametrize("mode,env,name", [
    # after the open: the GET of the IPC file's footer is refused (If-Match);
    # a stream is read in the one GET that opens it, all of one version
    ("changed", SMALL_PARTS, "t.arrow"),
    # mid-read, while parallel GETs fetch parts: every link is "slow"
    ("changing", SLOW_LINK, "t.arrows")])
def test_object_replaced_mid_read_is_an_error(sluice, fault_server, tmp_path, mode, env, name):
    srv = fault_server["server"]
    proc = subprocess.run([sluice.binary, "convert", f"{fault_server['url']}/{mode}/{name}",
                           str(tmp_path / "o.arrows"), "-t", "arrows", "-q"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, env=env)
    check_clean_failure(proc)
    assert "changed" in proc.stderr.decode(), proc.stderr.decode()
    assert not (tmp_path / "o.arrows").exists()
    assert srv.requests > (1 if mode == "changed" else 3), srv.log


@pytest.mark.parametrize("mode,why", [
    ("lmchanged", "Last-Modified"),  # splits are separate GETs: each is checked
    ("grown", "size "),              # no validator at all: only the size tells
    ("norangecutlm", "Last-Modified"),  # the stream broke off and was fetched again
    ("longetag", "ETag"),            # an ETag too long to send back in If-Match
])
def test_object_replaced_without_a_usable_etag_is_an_error(sluice, fault_server, tmp_path, mode,
                                                          why):
    """An object replaced while being read, on a server that sends no ETag
    (Last-Modified only, or nothing), or one too long to send back, is the
    same error as with an ETag, not a silent mix of rows from two versions
    (sluice exited 0 with both). Ranged requests carry If-Unmodified-Since
    when there is no ETag to send in If-Match."""
    srv = fault_server["server"]
    proc = subprocess.run([sluice.binary, "convert", f"{fault_server['url']}/{mode}/t.csv",
                           str(tmp_path / "o.arrows"), "-t", "arrows", "-q"],
                          capture_output=True, timeout=120, env=SMALL_PARTS)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "changed while being read" in err and why in err, err
    if mode == "lmchanged":
        ranged = [c for (m, r), c in zip(srv.log, srv.conditions) if r and r != "bytes=0-65535"]
        assert ranged and all(ius is not None and im is None for im, ius in ranged), srv.conditions


def test_retry_after_is_waited(sluice, fault_server, tmp_path):
    """A 503 with Retry-After: 2 is retried after 2 s, as curl --retry waits
    it, not after the 0.1-0.2 s of the first backoff (a server asking to be
    left alone for a while got hammered)."""
    srv = fault_server["server"]
    extra = fault_server["files"]["t.csv"]
    local = local_table(sluice, fault_server["www"] / "t.csv", tmp_path / "l.arrows", extra)
    remote = read_table(sluice, f"{fault_server['url']}/retryafter/t.csv", tmp_path / "r.arrows",
                        extra)
    assert remote.equals(local)
    # every 503 was followed by its retry no sooner than asked
    gaps = [b - a for a, b in zip(srv.times, srv.times[1:])]
    assert len(srv.times) >= 2 and max(gaps) >= 1.9, gaps


def test_rows_come_as_a_server_without_ranges_sends_them(sluice, fault_server):
    """A server that ignores Range (Python's http.server) sends 1.2 MB of a
    CSV and stalls: `cat -n 3` prints the rows that came and exits 0 at
    once, as `curl | head` does (the stream waited for a 4 MiB window, and
    the sample for a second whole 1 MiB part: the stall's timeout, then an
    error)."""
    rows = [f"{i},{'x' * (i % 50)},{i}.5" for i in range(120_000)]
    text = "id,s,f\n" + "\n".join(rows) + "\n"
    assert len(text) > 4 << 20
    (fault_server["www"] / "big.csv").write_text(text)
    proc = sluice.run_raw("cat", f"{fault_server['url']}/norangestall/big.csv", "-n", "3",
                          "-t", "csv", timeout=25)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().splitlines() == ["id,s,f", *rows[:3]], proc.stdout


def test_a_retry_after_past_the_cap_is_not_waited(sluice, fault_server):
    """A 429 asking to retry after an hour: an error at once that says so
    (it waited the 60 s cap five times, 5 minutes in silence, and called a
    429 "request failed"); curl --retry gives up on such a wait too."""
    srv = fault_server["server"]
    before = srv.requests
    proc = sluice.run_raw("cat", f"{fault_server['url']}/retrylong/t.csv", "-n", "1",
                          timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "HTTP 429 (too many requests) (it asks to retry after 3600 s: more than 60 s, " \
        "not waited): busy" in err, err
    assert srv.requests - before == 1, srv.log[before:]  # asked once, not retried


def test_password_in_the_url_is_not_in_messages(sluice, fault_server, tmp_path):
    """A password in an http(s) URL (sent as Basic authentication) shows as
    *** in every message, as a cql:// one does: missing objects, format
    errors, a filter's, several locations'."""
    url = fault_server["url"].replace("//", "//alice:s3cr3tpw@", 1)
    (fault_server["www"] / "bad.parquet").write_bytes(b"PAR1garbagegarbagePAR1")
    for args in (["schema", f"{url}/ok/absent.csv"], ["schema", f"{url}/ok/bad.parquet"],
                 ["stats", f"{url}/ok/t.csv", "--filter", "zz=1"],
                 ["cat", f"{url}/ok/t.csv", f"{url}/ok/bad.parquet"],
                 ["cat", "-c", "q", f"{url}/ok/t.csv"]):
        proc = sluice.run_raw(*args, timeout=120)
        check_clean_failure(proc)
        err = proc.stderr.decode()
        assert "s3cr3tpw" not in err and "alice:***@127.0.0.1" in err, (args, err)


def test_presigned_signature_is_not_in_messages(sluice, fault_server):
    """The signature and credential of a presigned URL (good as a password
    until it expires) show as *** in messages; other parameters stay, so
    the URL can still be told apart."""
    query = ("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDSECRETKEY%2F20261205"
             "&X-Amz-Expires=60&x-amz-signature=deadbeefcafe&part=7")
    proc = sluice.run_raw("schema", f"{fault_server['url']}/ok/absent.csv?{query}#frag",
                          timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "AKIDSECRETKEY" not in err and "deadbeefcafe" not in err, err
    assert ("absent.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=***&X-Amz-Expires=60"
            "&x-amz-signature=***&part=7") in err, err


def test_opening_get_says_what_the_server_said(sluice, fault_server, tmp_path):
    """A failing opening GET is reported with the server's own words (S3's
    code and message from the body), not as a HEAD that has none; a 503 on
    it is retried as a GET, so a server that refuses HEAD still reads."""
    proc = sluice.run_raw("schema", f"{fault_server['url']}/region/t.csv", timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "GET: HTTP 400" in err and "AuthorizationHeaderMalformed" in err and "eu-west-1" in err
    extra = fault_server["files"]["t.arrow"]
    local = local_table(sluice, fault_server["www"] / "t.arrow", tmp_path / "l.arrows", extra)
    remote = read_table(sluice, f"{fault_server['url']}/nohead/t.arrow", tmp_path / "r.arrows",
                        extra)
    assert remote.equals(local)


def curl_says(url: str, *args: str) -> tuple[int, str]:
    """What `curl -L` (as many redirects as sluice follows) says of `url`:
    its exit code and the first line of its error without the "curl: (N) "
    before it, the milliseconds a connect took spelled "after N ms"."""
    if shutil.which("curl") is None:
        pytest.skip("the curl command is not installed")
    proc = subprocess.run(["curl", "-sS", "-L", "--max-redirs", "5", "-o", os.devnull, *args, url],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    line = proc.stderr.decode().strip().split("\n", 1)[0]
    return proc.returncode, re.sub(r"after \d+ ms", "after N ms", line.split(") ", 1)[-1])


def test_redirect_loop_and_refused_scheme_say_why(sluice, fault_server):
    """A redirect libcurl cannot follow is reported as curl -L reports it,
    naming where it led: a loop as too many redirects (it was "HTTP 302
    (redirect not followed): Maximum (5) redirects followed"), a scheme
    libcurl refuses with its reason. A 302 without a Location is an answer:
    its status, and why it went no further; so is a target's error status,
    after where the redirect led."""
    url = f"{fault_server['url']}/loop/t.csv"
    proc = sluice.run_raw("schema", url, timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert curl_says(url)[0] == 47  # CURLE_TOO_MANY_REDIRECTS
    assert f"{url}: GET: too many redirects (5), the last to {url}\n" in err, err
    url = f"{fault_server['url']}/tofile/t.csv"
    proc = sluice.run_raw("schema", url, timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    code, why = curl_says(url)
    assert code == 1 and '"file"' in why, why  # CURLE_UNSUPPORTED_PROTOCOL
    assert f"{url}: GET: redirected to file:///etc/passwd: {why}\n" in err, err
    # Nor to ftp:// (libcurl's default would follow it): only http and https,
    # as curl -L --proto-redir =http,https says.
    fault_server["server"].redirect_to = f"ftp://bob:pa55w0rd@127.0.0.1:{free_port()}/x.csv"
    url = f"{fault_server['url']}/elsewhere/t.csv"
    proc = sluice.run_raw("schema", url, timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    code, why = curl_says(url, "--proto-redir", "=http,https")
    assert code == 1 and '"ftp"' in why, why  # CURLE_UNSUPPORTED_PROTOCOL
    shown = fault_server["server"].redirect_to.replace("pa55w0rd", "***")
    assert f"{url}: GET: redirected to {shown}: {why}\n" in err, err
    assert "pa55w0rd" not in err, err
    proc = sluice.run_raw("schema", f"{fault_server['url']}/noloc/t.csv", timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "GET: HTTP 302 (redirect not followed): the answer has no Location" in err, err
    # A target that answers with an error: its status, naming the target.
    fault_server["server"].redirect_to = f"{fault_server['url']}/ok/absent.csv"
    proc = sluice.run_raw("schema", f"{fault_server['url']}/elsewhere/t.csv", timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert (f"GET: redirected to {fault_server['url']}/ok/absent.csv: HTTP 404 (not found)"
            in err), err


@pytest.mark.parametrize("scheme,user,query", [
    ("http", "", ""), ("http", "bob:pa55w0rd@", "?X-Amz-Signature=5ecret&part=1"),
    ("https", "bob:pa55w0rd@", "")])
def test_followed_redirect_that_cannot_connect_names_the_target(sluice, fault_server, scheme,
                                                                 user, query):
    """A redirect followed to a server that does not answer fails as curl
    -L says, naming the target as locations are named (no password, of
    any scheme libcurl follows to; no presigned signature); it was "HTTP 302 (redirect not followed): Failed
    to connect ...", which named neither. (Retried, as a server that does
    not answer is.)"""
    port = free_port()
    fault_server["server"].redirect_to = f"{scheme}://{user}127.0.0.1:{port}/x.csv{query}"
    url = f"{fault_server['url']}/elsewhere/t.csv"
    proc = sluice.run_raw("schema", url, timeout=120)
    check_clean_failure(proc)
    err = re.sub(r"after \d+ ms", "after N ms", proc.stderr.decode())
    code, why = curl_says(url)
    assert code == 7, why  # CURLE_COULDNT_CONNECT
    shown = f"{scheme}://{'bob:***@' if user else ''}127.0.0.1:{port}/x.csv" + \
        ("?X-Amz-Signature=***&part=1" if query else "")
    assert f"{url}: GET: redirected to {shown}: {why}\n" in err, err
    # (the status as a word: a port, 33027, may hold the digits)
    assert not re.search(r"\b302\b", err) and "pa55w0rd" not in err and "5ecret" not in err, err


def test_followed_redirect_to_an_untrusted_certificate(sluice, nginx, fault_server, tmp_path):
    """A redirect to https:// whose certificate is not trusted is the TLS
    error of a direct read, with how to trust the certificate, naming the
    target; with --ca-bundle the same URL reads as the file does locally."""
    fault_server["server"].redirect_to = f"{nginx['url']}/t.csv"
    url = f"{fault_server['url']}/elsewhere/t.csv"
    proc = sluice.run_raw("schema", url, timeout=120)
    check_clean_failure(proc)
    err = proc.stderr.decode()
    code, why = curl_says(url)
    assert code == 60, why  # CURLE_PEER_FAILED_VERIFICATION
    assert (f"{url}: GET: redirected to {nginx['url']}/t.csv: TLS error: {why} (ca_bundle=FILE "
            "names the CA, insecure=True skips verification; CLI: --ca-bundle FILE, "
            "--insecure)") in err, err
    local = local_table(sluice, nginx["www"] / "t.csv", tmp_path / "l.arrows", [])
    remote = read_table(sluice, url, tmp_path / "r.arrows", ["--ca-bundle", str(nginx["cert"])])
    assert remote.equals(local)


def test_server_down_fails_after_retries(sluice, fault_server):
    proc = sluice.run_raw("schema", f"{fault_server['url']}/down/t.csv", timeout=120)
    check_clean_failure(proc)
    assert "503" in proc.stderr.decode()


def test_silent_server_times_out_as_asked(sluice):
    """A server that accepts connections and never answers: --timeout bounds
    each attempt (by default 60 s without a byte, 6 attempts: minutes), and
    the error says the request timed out. A bad value is a usage error."""
    with silent_server() as (port, held):
        url = f"http://127.0.0.1:{port}/t.csv"
        start = time.monotonic()
        proc = sluice.run_raw("schema", url, "--timeout", "0.5", timeout=120)
        took = time.monotonic() - start
        check_clean_failure(proc)
        err = proc.stderr.decode()
        assert "timed out" in err.lower(), err
        assert took < 60, took  # 6 attempts of about a second with backoff, not 6 minutes
        assert len(held) >= 2  # it was retried
        bad = sluice.run_raw("schema", url, "--timeout", "0")
        assert bad.returncode == 2 and b"--timeout" in bad.stderr, bad


def test_stall_after_some_bytes_times_out_as_asked(sluice, fault_server, tmp_path):
    """--timeout N: a transfer that stops bringing bytes mid-body is given
    up after N s (within about a second: libcurl's progress calls), and
    resumed; libcurl's low-speed check, which averages over about 5 s, took
    N + 6 s once bytes had come. The values are the local file's."""
    srv = fault_server["server"]
    local = local_table(sluice, fault_server["www"] / "t.csv", tmp_path / "l.arrows", [])
    remote = read_table(sluice, f"{fault_server['url']}/stall/t.csv", tmp_path / "r.arrows",
                        ["--timeout", "2"])
    assert remote.equals(local)
    stalled = next(i for i, (m, r) in enumerate(srv.log)
                   if m == "GET" and r and int(r.split("=")[1].split("-")[1] or 1 << 40) -
                   int(r.split("=")[1].split("-")[0]) >= 100_000)
    end = srv.log[stalled][1].split("-")[1]
    retry = next(j for j in range(stalled + 1, len(srv.log))
                 if srv.log[j][1] and srv.log[j][1].split("-")[1] == end)  # resumed, same end
    retry_after = srv.times[retry] - srv.times[stalled]
    assert 2 <= retry_after < 4, (retry_after, srv.log)


def _fetched_bytes(log, size: int) -> int:
    """Bytes the (method, Range) log asked for: a-b ranges by their length,
    open ones (a-) to the end of the object, and no Range as all of it."""
    total = 0
    for method, rng in log:
        if method != "GET":
            continue
        if not rng:
            total += size
            continue
        first, _, last = rng.split("=", 1)[1].partition("-")
        total += (int(last) + 1 if last else size) - int(first)
    return total


def test_ipc_file_projection_fetches_only_its_columns(sluice, fault_server, tmp_path):
    """A projected read of an Arrow IPC file over HTTP fetches the footer,
    each record batch's metadata and the projected columns' buffers (nearby
    ones in one request), not whole record batches: issue 6's ranged reads
    for formats with footers. Values equal the local projection, through
    faults too."""
    cols = {f"c{i}": pa.array(range(i, i + 500_000), pa.int64()) for i in range(10)}
    cols["s"] = pa.array([f"v{i % 977}" for i in range(500_000)])
    table = pa.table(cols)
    path = fault_server["www"] / "wide.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table, max_chunksize=125_000)  # 4 record batches
    size = path.stat().st_size
    srv = fault_server["server"]
    for projection, data_bytes in ((["c3"], 500_000 * 8), (["s", "c1"], 500_000 * 8 + 3_000_000),
                                   (["c9", "c0"], 2 * 500_000 * 8)):
        args = ["-c", ",".join(projection)]
        local = local_table(sluice, path, tmp_path / "l.arrows", args)
        assert local.column_names == projection
        for mode in ("ok", "flaky", "cut"):
            before = len(srv.log)
            remote = read_table(sluice, f"{fault_server['url']}/{mode}/wide.arrow",
                                tmp_path / "r.arrows", args)
            assert remote.equals(local), (projection, mode)
            if mode == "ok":
                fetched = _fetched_bytes(srv.log[before:], size)
                # Far from the 40+ MB of whole batches; c9 and c0 are apart,
                # each fetched on its own.
                assert fetched < data_bytes * 1.1 + (1 << 20), (projection, fetched, size)


def test_parquet_struct_field_fetches_only_its_chunks(sluice, fault_server, tmp_path):
    """`-c st.x` over HTTP fetches the footer and st.x's column chunks, not
    the struct's other leaves (a 6 MB string field beside it); the values
    equal pyarrow's read_table(columns=["st.x"]) of the file."""
    import pyarrow.parquet as pq
    n = 300_000
    st = pa.StructArray.from_arrays(
        [pa.array(range(n), pa.int64()), pa.array([f"{i:019d}" for i in range(n)]),
         pa.array([i * 0.5 for i in range(n)])], names=["x", "y", "w"])
    path = fault_server["www"] / "nested.parquet"
    pq.write_table(pa.table({"id": pa.array(range(n)), "st": st}), path, compression="none",
                   use_dictionary=False, row_group_size=100_000)
    size = path.stat().st_size
    md = pq.ParquetFile(path).metadata
    x_bytes = sum(md.row_group(g).column(1).total_compressed_size
                  for g in range(md.num_row_groups))
    assert md.row_group(0).column(1).path_in_schema == "st.x"
    srv = fault_server["server"]
    for cols, needed in ((["st.x"], x_bytes), (["st.x", "st.w"], 2 * x_bytes)):
        before = len(srv.log)
        got = read_table(sluice, f"{fault_server['url']}/ok/nested.parquet",
                         tmp_path / "r.arrows", ["-c", ",".join(cols)])
        assert got.equals(pq.read_table(path, columns=cols)), cols
        fetched = _fetched_bytes(srv.log[before:], size)
        assert fetched < needed * 1.1 + (1 << 20), (cols, fetched, needed, size)


def test_parquet_point_lookup_fetches_one_row_group(sluice, fault_server, tmp_path):
    """A lookup that Bloom filters settle reads, over HTTP, the footer, the
    filters (in one request: they lie together) and the one row group that
    may hold the value, not the file; the rows equal the local read's,
    through broken transfers too."""
    import random
    import pyarrow.parquet as pq
    rnd = random.Random(4)
    n, per_group = 400_000, 50_000
    ids = list(range(n))
    rnd.shuffle(ids)  # statistics cannot prune: only the filters can
    table = pa.table({"k": pa.array(["key-%07d" % (i * 7919 % 1000003) for i in ids]),
                      "x": pa.array([i / 3 for i in ids])})
    path = fault_server["www"] / "lookup.parquet"
    pq.write_table(table, path, row_group_size=per_group, compression=None,
                   bloom_filter_options={"k": {"ndv": per_group, "fpp": 0.001}})
    meta = pq.ParquetFile(path).metadata
    filters = sum(meta.row_group(g).column(0).to_dict()["bloom_filter_length"]
                  for g in range(meta.num_row_groups))
    size = path.stat().st_size
    value = table["k"][123_456].as_py()
    args = ["--filter", f"k={value}"]
    local = local_table(sluice, path, tmp_path / "l.arrows", args)
    assert local["k"].to_pylist() == [value]
    srv = fault_server["server"]
    for mode in ("ok", "flaky", "cut"):
        before = len(srv.log)
        remote = read_table(sluice, f"{fault_server['url']}/{mode}/lookup.parquet",
                            tmp_path / "r.arrows", args)
        assert remote.equals(local), mode
        if mode == "ok":
            fetched = _fetched_bytes(srv.log[before:], size)
            one_group = (size - filters) / meta.num_row_groups
            assert fetched < one_group * 1.5 + filters + (1 << 20), (fetched, size)
            # The eight filters lie together: one request for all of them
            # (the others: the file's head and tail, the row group's pages).
            gets = [r for r in srv.log[before:] if r[0] == "GET"]
            assert len(gets) <= 6, gets


@pytest.mark.parametrize("rows", [2_000, 80_000, 250_000])
def test_csv_bytes_are_fetched_once(sluice, fault_server, tmp_path, rows):
    """A CSV of up to 64 KiB is the opening GET alone (it was fetched whole
    again by its split); a larger one's inference sample (1 MiB, fetched
    while opening) serves the first split, which fetches only the rest (a
    1.2 MB CSV cost 2.06 times its bytes, now about 1.06). Values equal
    pyarrow's."""
    www, srv = fault_server["www"], fault_server["server"]
    table = pa.table({"id": pa.array(range(rows), pa.int64()),
                      "v": pa.array([i * 7 % 1000 for i in range(rows)], pa.int64())})
    path = www / f"c{rows}.csv"
    pacsv.write_csv(table, path)
    size = path.stat().st_size
    srv.log.clear()
    got = read_table(sluice, f"{fault_server['url']}/ok/{path.name}", tmp_path / "r.arrows", [])
    assert got.equals(pacsv.read_csv(path)), rows
    fetched = _fetched_bytes(srv.log, size)
    if size <= 65536:
        assert srv.log == [("GET", "bytes=0-65535")], srv.log
    else:
        # the opening 64 KiB, then every byte once, but for the 64 KiB past
        # its end a split fetches for the row that crosses it
        assert fetched <= size + 65536 * (2 + size // (1 << 20)), (fetched, size, srv.log)


def test_parquet_row_group_requests_as_documented(sluice, fault_server, tmp_path):
    """README's count: a Parquet object of one row group opened by its tail
    (-f parquet) is two requests with --threads 1 (the tail, then the
    projected chunks, which lie together, in one GET); with more threads,
    the row group is decoded in column parts, each fetching its own chunk
    (three columns: four requests), the same bytes either way. Values
    equal pyarrow's."""
    import pyarrow.parquet as pq
    table = pa.table({f"c{i}": pa.array(range(0, 50_000 * i, i) if i else [0] * 50_000,
                                        pa.int64()) for i in range(10)})
    path = fault_server["www"] / "one_group.parquet"
    pq.write_table(table, path, compression="none")
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    srv, size = fault_server["server"], path.stat().st_size
    want = table.select(["c1", "c2", "c3"])
    fetched = {}
    for threads, requests in (("1", 2), ("4", 4)):
        srv.log.clear()
        got = read_table(sluice, f"{fault_server['url']}/ok/one_group.parquet",
                         tmp_path / "r.arrows",
                         ["-f", "parquet", "-c", "c1,c2,c3", "--threads", threads])
        assert got.equals(want), threads
        assert len(srv.log) == requests and srv.log[0] == ("GET", "bytes=-65536"), srv.log
        fetched[threads] = _fetched_bytes(srv.log[1:], size)
    assert abs(fetched["1"] - fetched["4"]) < 4096, fetched


def test_parquet_lookup_by_dictionaries_fetches_one_row_group(sluice, fault_server, tmp_path):
    """Over HTTP, a lookup in pyarrow's default file (no Bloom filter,
    dictionary-encoded, encoding_stats) reads each row group's dictionary
    page of the filter's column (a request each, as its split comes up) and
    then only the row group that holds the value; rows equal the local
    read's, through broken transfers too."""
    import pyarrow.parquet as pq
    n, per_group = 400_000, 50_000
    # Users in runs of 16, in an order unrelated to the rows: every row
    # group's min/max span nearly all users, its dictionary 3,125 of them.
    users = ["user-%06d" % ((i // 16) * 7919 % (n // 16)) for i in range(n)]
    table = pa.table({"u": pa.array(users), "x": pa.array([i / 3 for i in range(n)])})
    path = fault_server["www"] / "dict_lookup.parquet"
    pq.write_table(table, path, row_group_size=per_group, compression="snappy")
    meta = pq.ParquetFile(path).metadata
    size = path.stat().st_size
    value = users[123_456]
    args = ["--filter", f"u={value}"]
    local = local_table(sluice, path, tmp_path / "l.arrows", args)
    assert local["u"].to_pylist() == [value] * 16
    srv = fault_server["server"]
    for mode in ("ok", "flaky", "cut"):
        before = len(srv.log)
        remote = read_table(sluice, f"{fault_server['url']}/{mode}/dict_lookup.parquet",
                            tmp_path / "r.arrows", args)
        assert remote.equals(local), mode
        if mode == "ok":
            fetched = _fetched_bytes(srv.log[before:], size)
            one_group = size / meta.num_row_groups
            dictionaries = sum(meta.row_group(g).column(0).data_page_offset -
                               meta.row_group(g).column(0).dictionary_page_offset
                               for g in range(meta.num_row_groups))
            assert fetched < one_group * 1.5 + dictionaries + (1 << 20), (fetched, size)
    # Without the filter every row group is read: the lookup did prune.
    before = len(srv.log)
    read_table(sluice, f"{fault_server['url']}/ok/dict_lookup.parquet", tmp_path / "a.arrows",
               [])
    assert _fetched_bytes(srv.log[before:], size) > size * 0.8


def test_ipc_file_projection_of_every_kind_of_column(sluice, fault_server, tmp_path):
    """Each column of a file with nested, dictionary, view and union columns,
    compressed buffers, read alone over HTTP, equals the local read: the
    projected fetch finds every column's buffers."""
    n = 3000
    table = pa.table({
        "i": pa.array(range(n), pa.int32()),
        "s": pa.array([None if i % 7 == 0 else f"s{i}" for i in range(n)]),
        "l": pa.array([[i, i + 1] if i % 5 else None for i in range(n)], pa.list_(pa.int64())),
        "st": pa.array([{"a": i, "b": f"x{i}"} for i in range(n)]),
        "d": pa.array([f"k{i % 9}" for i in range(n)]).dictionary_encode(),
        "v": pa.array([f"view{i}" * (i % 4) for i in range(n)], pa.string_view()),
        "u": pa.UnionArray.from_dense(pa.array([i % 2 for i in range(n)], pa.int8()),
                                      pa.array([i // 2 for i in range(n)], pa.int32()),
                                      [pa.array(range(n), pa.int64()),
                                       pa.array([str(i) for i in range(n)])]),
        "m": pa.array([{"k": i} for i in range(n)], pa.map_(pa.string(), pa.int64())),
        "f": pa.array([i / 3 for i in range(n)]),
    })
    for codec in (None, "zstd", "lz4"):
        path = fault_server["www"] / f"kinds_{codec}.arrow"
        opts = pa.ipc.IpcWriteOptions(compression=codec)
        with pa.OSFile(str(path), "wb") as sink, \
                pa.ipc.new_file(sink, table.schema, options=opts) as w:
            w.write_table(table, max_chunksize=1000)
        for name in table.column_names + ["f,i", "u,s"]:
            args = ["-c", name]
            local = local_table(sluice, path, tmp_path / "l.arrows", args)
            remote = read_table(sluice, f"{fault_server['url']}/ok/{path.name}",
                                tmp_path / "r.arrows", args)
            assert remote.equals(local), (codec, name)


def test_footer_formats_in_a_list_without_range_support(sluice, fault_server, tmp_path):
    """Parquet and Arrow IPC files in a list of locations, from a server that
    ignores Range or from a pipe, are spooled to a temporary file as one such
    object is: the table is pyarrow's read of the files, concatenated in list
    order (as DuckDB and polars read a list)."""
    import pyarrow.parquet as pq
    www, url = fault_server["www"], fault_server["url"]
    pq.write_table(pacsv.read_csv(www / "t.csv").slice(0, 25_000), www / "t.parquet",
                   row_group_size=7_000)
    for name, read in (("t.parquet", pq.read_table),
                       ("t.arrow", lambda p: ipc.open_file(p).read_all())):
        want = pa.concat_tables([read(www / name)] * 3)
        locations = [f"{url}/norange/{name}", f"{url}/ok/{name}", f"{url}/norange/{name}"]
        proc = subprocess.run([sluice.binary, "convert", *locations, str(tmp_path / "r.arrows"),
                               "-t", "arrows", "-q"], capture_output=True, timeout=120,
                              env=SMALL_PARTS)
        assert proc.returncode == 0, proc.stderr.decode()
        assert ipc.open_stream((tmp_path / "r.arrows").read_bytes()).read_all().equals(want)
        # A pipe among local files.
        r, w = os.pipe()
        feeder = threading.Thread(target=lambda: (os.write(w, (www / name).read_bytes()),
                                                  os.close(w)))
        feeder.start()
        try:
            proc = subprocess.run([sluice.binary, "convert", str(www / name), f"/dev/fd/{r}",
                                   str(www / name), str(tmp_path / "p.arrows"), "-t", "arrows",
                                   "-q"], capture_output=True, timeout=120, pass_fds=(r,))
        finally:
            feeder.join()
            os.close(r)
        assert proc.returncode == 0, proc.stderr.decode()
        assert ipc.open_stream((tmp_path / "p.arrows").read_bytes()).read_all().equals(want)
