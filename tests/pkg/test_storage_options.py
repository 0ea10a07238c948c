"""storage_options={...} for s3:// in sluice.read / scan / schema / write:
the keys pandas/s3fs, polars and pyarrow users spell, against s3s-fs (a
real S3 server that verifies SigV4 signatures, so a read succeeds only if
the given keys signed it), reached through a forwarder that sees each
request's target and headers. The environment has no AWS_* variables and
HOME has no ~/.aws files unless a test puts them there."""
import pytest

import sluice
from servers import (S3_ACCESS_KEY, S3_SECRET_KEY, ConnectionCounter, free_port, s3s_fs_binary,
                     start_s3s_fs, stop)

BUCKET = "bkt"
CSV = b"a,b\n1,x\n2,y\n"


@pytest.fixture
def s3(monkeypatch, tmp_path):
    """(ConnectionCounter in front of s3s-fs, its host:port)."""
    binary = s3s_fs_binary()
    if binary is None:
        pytest.skip("s3s-fs not built (scripts/setup.sh builds it into .cache/s3s-fs)")
    for k in list(__import__("os").environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws files
    (tmp_path / "data" / BUCKET).mkdir(parents=True)
    (tmp_path / "data" / BUCKET / "k.csv").write_bytes(CSV)
    port = free_port()
    counter = ConnectionCounter(port)
    host = "localhost:%d" % counter.port
    log_path = tmp_path / "s3s-fs.log"
    with open(log_path, "wb") as log:
        proc = start_s3s_fs(binary, tmp_path / "data", port, log, log_path, virtual_hosts=[host])
        yield counter, host
        stop(proc)
        counter.close()


def test_keys_region_token_and_endpoint(s3):
    counter, host = s3
    opts = {"aws_access_key_id": S3_ACCESS_KEY, "aws_secret_access_key": S3_SECRET_KEY,
            "aws_session_token": "tok", "aws_region": "eu-north-1",
            "endpoint_url": "http://" + host}
    t = sluice.read("s3://%s/k.csv" % BUCKET, storage_options=opts)
    assert t.to_pydict() == {"a": [1, 2], "b": ["x", "y"]}
    heads = [r["headers"] for r in counter.requests]
    assert heads and all(h["authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=%s/" % S3_ACCESS_KEY)
        and "/eu-north-1/s3/aws4_request" in h["authorization"]
        and h["x-amz-security-token"] == "tok" for h in heads), heads
    # A wrong secret fails: the keys given are the ones that sign.
    with pytest.raises(sluice.Error, match="403"):
        sluice.read("s3://%s/k.csv" % BUCKET, storage_options=dict(opts, aws_secret_access_key="no"))
    # The s3fs spellings, in sluice.schema too.
    s = sluice.schema("s3://%s/k.csv" % BUCKET, storage_options={
        "key": S3_ACCESS_KEY, "secret": S3_SECRET_KEY, "endpoint_url": "http://" + host})
    assert [f.name for f in s] == ["a", "b"]


def test_write_with_storage_options(s3, tmp_path):
    counter, host = s3
    opts = {"key": S3_ACCESS_KEY, "secret": S3_SECRET_KEY, "endpoint_url": "http://" + host}
    table = sluice.read("s3://%s/k.csv" % BUCKET, storage_options=opts)
    sluice.write(table, "s3://%s/out.parquet" % BUCKET, storage_options=opts)
    assert (tmp_path / "data" / BUCKET / "out.parquet").exists()
    back = sluice.read("s3://%s/out.parquet" % BUCKET, storage_options=opts)
    assert back.to_pydict() == table.to_pydict()
    assert any(r["method"] == "PUT" for r in counter.requests)


def test_anonymous_and_virtual_addressing(s3, monkeypatch):
    counter, host = s3
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", S3_ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", S3_SECRET_KEY)
    # anon: unsigned despite the environment's keys, so s3s-fs refuses.
    with pytest.raises(sluice.Error, match="unsigned"):
        sluice.read("s3://%s/k.csv" % BUCKET, storage_options={
            "anon": True, "endpoint_url": "http://" + host})
    assert counter.requests
    assert all("authorization" not in r["headers"] for r in counter.requests)
    # Virtual-hosted addressing, signed with the environment's keys.
    counter.requests.clear()
    t = sluice.read("s3://%s/k.csv" % BUCKET, storage_options={
        "endpoint_url": "http://" + host, "force_virtual_addressing": True})
    assert t.num_rows == 2
    assert counter.requests
    for r in counter.requests:
        assert r["target"] == "/k.csv" and r["headers"]["host"] == "%s.%s" % (BUCKET, host), r
        assert "Credential=%s/" % S3_ACCESS_KEY in r["headers"]["authorization"]


def test_bad_storage_options(s3):
    _, host = s3
    with pytest.raises(ValueError, match="unknown storage option 'bogus'"):
        sluice.read("s3://%s/k.csv" % BUCKET, storage_options={"bogus": 1})
    with pytest.raises(sluice.Error, match="profile 'nope' not found"):
        sluice.read("s3://%s/k.csv" % BUCKET, storage_options={"profile": "nope",
                                                              "endpoint_url": "http://" + host})
    with pytest.raises(sluice.Error, match="secret access key"):
        sluice.read("s3://%s/k.csv" % BUCKET, storage_options={"key": "only-the-id",
                                                              "endpoint_url": "http://" + host})


def test_partitioned_write_of_more_objects_than_open_files(s3, tmp_path):
    """A partitioned write to S3 keeps every finished object until the
    uploads in one spool file, not a file descriptor each: 600 objects
    (300 partitions, 2 files each) under a soft limit of 128 open files
    in a Python process, which (unlike the CLI) does not raise its own."""
    import resource
    import subprocess
    import sys
    import pyarrow.parquet as pq
    counter, host = s3
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 128:
        pytest.skip(f"hard limit on open files is {hard}")
    code = (
        "import sys, resource, sluice, pyarrow as pa\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (128, resource.getrlimit("
        "resource.RLIMIT_NOFILE)[1]))\n"
        "t = pa.table({'id': list(range(1200)), 'b': [i % 300 for i in range(1200)]})\n"
        f"opts = {{'key': {S3_ACCESS_KEY!r}, 'secret': {S3_SECRET_KEY!r}, "
        f"'endpoint_url': 'http://{host}'}}\n"
        f"sluice.write(t, 's3://{BUCKET}/many/', format='parquet', partition_by='b',\n"
        "             max_rows_per_file=2, storage_options=opts)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    stored = sorted((tmp_path / "data" / BUCKET / "many").rglob("*.parquet"))
    assert len(stored) == 600
    ids = sorted(i for p in stored for i in pq.read_table(p).column("id").to_pylist())
    assert ids == list(range(1200))


@pytest.mark.parametrize("text,signed", [("False", True), ("0", True), ("no", True),
                                         ("TRUE", False), ("1", False), ("yes", False)])
def test_boolean_options_given_as_text(s3, text, signed):
    """anon / aws_skip_signature and force_virtual_addressing given as text
    are read as polars/object_store reads them (true/false, 1/0, yes/no in
    any case): anon="False" made the requests unsigned and
    force_virtual_addressing="False" made them virtual-hosted, as any
    non-empty string was true."""
    pl = pytest.importorskip("polars")
    counter, host = s3
    keys = {"aws_access_key_id": S3_ACCESS_KEY, "aws_secret_access_key": S3_SECRET_KEY,
            "aws_region": "us-east-1", "endpoint_url": "http://" + host}
    # polars, the peer whose key names these are: signed or not as sluice.
    try:
        peer = pl.read_csv("s3://%s/k.csv" % BUCKET, storage_options=dict(
            keys, aws_allow_http="true", aws_skip_signature=text)).height
    except Exception:
        peer = None
    assert (peer == 2) == signed, peer
    counter.requests.clear()
    for key in ("anon", "aws_skip_signature"):
        if signed:
            t = sluice.read("s3://%s/k.csv" % BUCKET, storage_options=dict(keys, **{key: text}))
            assert t.num_rows == 2
        else:
            with pytest.raises(sluice.Error, match="unsigned"):
                sluice.read("s3://%s/k.csv" % BUCKET, storage_options=dict(keys, **{key: text}))
    counter.requests.clear()
    t = sluice.read("s3://%s/k.csv" % BUCKET,
                    storage_options=dict(keys, force_virtual_addressing=text))
    assert t.num_rows == 2
    virtual = not signed  # the same text: true means virtual-hosted here
    assert counter.requests and all(
        (r["headers"]["host"] == "%s.%s" % (BUCKET, host)) == virtual for r in counter.requests)


def test_bad_boolean_and_size_options(s3):
    _, host = s3
    for opts, what in (({"anon": "maybe"}, "anon='maybe': expected a boolean"),
                       ({"force_virtual_addressing": "2"}, "expected a boolean"),
                       ({"part_size": "16X"}, "part_size='16X': expected a size")):
        with pytest.raises(ValueError, match=what):
            sluice.read("s3://%s/k.csv" % BUCKET,
                        storage_options=dict(opts, endpoint_url="http://" + host))


def test_part_size_with_a_suffix(s3, tmp_path):
    """part_size="5M" is 5 MiB, as the CLI's --part-size 5M: a 12 MB object
    goes up in 3 parts (it was int("5M"), a ValueError)."""
    import os
    counter, host = s3
    opts = {"key": S3_ACCESS_KEY, "secret": S3_SECRET_KEY, "endpoint_url": "http://" + host}
    data = os.urandom(6 << 20).hex()
    table = __import__("pyarrow").table({"x": [data[i:i + 1000] for i in range(0, len(data), 1000)]})
    sluice.write(table, "s3://%s/big.arrows" % BUCKET, storage_options=dict(opts, part_size="5M"))
    parts = [r for r in counter.requests if r["method"] == "PUT" and "partNumber=" in r["target"]]
    assert len(parts) == 3, [r["target"] for r in counter.requests]
    back = sluice.read("s3://%s/big.arrows" % BUCKET, storage_options=opts)
    assert back.num_rows == table.num_rows


def test_part_size_over_s3s_limit(s3):
    """part_size over S3's 5 GiB a part is an error before any request (it
    was taken, and S3 refused the first part after the whole output was
    staged), as the CLI's --part-size and SLUICE_S3_PART_SIZE are; 5g is
    taken."""
    counter, host = s3
    opts = {"key": S3_ACCESS_KEY, "secret": S3_SECRET_KEY, "endpoint_url": "http://" + host}
    pa = __import__("pyarrow")
    table = pa.table({"x": [1, 2, 3]})
    counter.requests.clear()
    for size in (6 << 30, "6g", (5 << 30) + 1):
        with pytest.raises(ValueError, match=r"s3://bkt/p\.arrows: part size \d+ bytes "
                           r"\(part_size; CLI --part-size\) is more than S3 takes in one part: "
                           r"at most 5g"):
            sluice.write(table, "s3://%s/p.arrows" % BUCKET,
                         storage_options=dict(opts, part_size=size))
    assert not counter.requests, counter.requests
    sluice.write(table, "s3://%s/p.arrows" % BUCKET, storage_options=dict(opts, part_size="5g"))
    assert pa.table(sluice.read("s3://%s/p.arrows" % BUCKET, storage_options=opts)).equals(table)


def test_ctrl_c_during_a_multipart_upload_aborts_it(s3, tmp_path):
    """Ctrl-C while the parts go up (on a slow link): KeyboardInterrupt, the
    upload aborted, never completed, the object it was to replace kept. The
    parts went on, the upload was completed, and then KeyboardInterrupt came
    (the cancel hook answers on the caller's thread only, which waited for
    the upload threads without asking it)."""
    import _thread
    import os
    import threading
    import time
    counter, host = s3
    counter.up_bytes_per_s = 4 << 20  # each 5 MiB part takes over a second
    opts = {"key": S3_ACCESS_KEY, "secret": S3_SECRET_KEY, "endpoint_url": "http://" + host}
    stored = tmp_path / "data" / BUCKET / "big.arrows"
    stored.write_bytes(b"old")
    data = os.urandom(6 << 20).hex()  # 12 MB: 3 parts of 5 MiB, all in flight at once
    table = __import__("pyarrow").table({"x": [data[i:i + 1000] for i in range(0, len(data), 1000)]})

    def interrupt_once_a_part_goes_up():
        deadline = time.monotonic() + 60
        while not any("partNumber=" in r["target"] for r in counter.requests):
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
        _thread.interrupt_main()

    threading.Thread(target=interrupt_once_a_part_goes_up, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        sluice.write(table, "s3://%s/big.arrows" % BUCKET,
                     storage_options=dict(opts, part_size="5M"))
    targets = [(r["method"], r["target"]) for r in counter.requests]
    assert any("partNumber=" in t for _, t in targets), targets
    assert not any(m == "POST" and "uploadId=" in t for m, t in targets), targets
    assert any(m == "DELETE" and "uploadId=" in t for m, t in targets), targets
    assert stored.read_bytes() == b"old"
