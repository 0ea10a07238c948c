"""s3:// sources against a real S3 server that verifies SigV4 signatures:
s3s-fs (crates.io, built at a pinned version into .cache/ by
scripts/setup.sh), started on loopback over a temporary directory. Objects
are laid into the server's data directory (s3s-fs maps bucket/key to
DIR/bucket/key), then read through s3:// by sluice and compared with sluice's
read of the same local file. Credentials come from the environment, from a
profile in ~/.aws/credentials + ~/.aws/config, or are missing (anonymous);
wrong ones give a clear error. Writes go to s3:// (one PUT, or a multipart
upload with small parts) and are read back; failed writes leave no object.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pyarrow.ipc as ipc
import pytest

from conftest import REPO, check_clean_failure
from test_http import local_table, make_files

ACCESS_KEY = "sluicetestkey"
SECRET_KEY = "sluice-test-secret-0123456789"
BUCKET = "data"


def s3s_fs_binary() -> str | None:
    env = os.environ.get("SLUICE_S3S_FS")
    if env:
        return env
    cand = REPO / ".cache" / "s3s-fs" / "bin" / "s3s-fs"
    return str(cand) if cand.exists() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    binary = s3s_fs_binary()
    if binary is None:
        pytest.skip("s3s-fs not built (scripts/setup.sh builds it into .cache/s3s-fs)")
    root = tmp_path_factory.mktemp("s3")
    data = root / "data"
    (data / BUCKET / "dir").mkdir(parents=True)
    local = root / "local"
    local.mkdir()
    files = make_files(local, 60_000)
    for name in files:
        shutil.copy(local / name, data / BUCKET / name)
    shutil.copy(local / "t.csv", data / BUCKET / "dir" / "a b+c.csv")  # a key to encode
    port = free_port()
    log = open(root / "server.log", "wb")
    proc = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", str(port),
                             "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY, str(data)],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"s3s-fs did not start: {(root / 'server.log').read_text()}")
            time.sleep(0.05)
    home = root / "home"
    home.mkdir()
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    base_env["HOME"] = str(home)
    yield {"endpoint": f"http://127.0.0.1:{port}", "local": local, "files": files,
           "home": home, "base_env": base_env, "data": data}
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def env_with(s3, **extra) -> dict:
    env = dict(s3["base_env"])
    env.update({"AWS_ENDPOINT_URL": s3["endpoint"], "AWS_REGION": "us-east-1"})
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def creds(s3, **extra) -> dict:
    return env_with(s3, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, **extra)


def run(sluice, env, *args):
    return subprocess.run([sluice.binary, *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120, env=env)


def read_s3(sluice, env, key, out: Path, extra) -> object:
    proc = run(sluice, env, "convert", f"s3://{BUCKET}/{key}", out, "-t", "arrows", "-q", *extra)
    assert proc.returncode == 0, f"s3://{BUCKET}/{key}: {proc.stderr.decode()}"
    return ipc.open_stream(out.read_bytes()).read_all()


def test_every_format_through_s3(sluice, s3, tmp_path):
    compared = set()
    for name, extra in s3["files"].items():
        local = local_table(sluice, s3["local"] / name, tmp_path / "l.arrows", extra)
        if local is None:
            continue
        compared.add(name)
        remote = read_s3(sluice, creds(s3), name, tmp_path / "r.arrows", extra)
        assert remote.equals(local), name
    assert {"t.csv", "t.arrow", "t.arrows", "m.lenprefix"} <= compared


def test_small_parts_and_encoded_key(sluice, s3, tmp_path):
    env = creds(s3, SLUICE_HTTP_PART_SIZE="8191")
    for key, name in (("m.lenprefix", "m.lenprefix"), ("t.arrows", "t.arrows"),
                      ("dir/a b+c.csv", "t.csv")):
        extra = s3["files"][name]
        local = local_table(sluice, s3["local"] / name, tmp_path / "l.arrows", extra)
        remote = read_s3(sluice, env, key, tmp_path / "r.arrows", extra)
        assert remote.equals(local), key


def test_wrong_secret_is_a_clear_error(sluice, s3):
    env = env_with(s3, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY="wrong-secret")
    proc = run(sluice, env, "schema", f"s3://{BUCKET}/t.csv")
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "403" in err and "credentials" in err, err


def test_unknown_access_key_is_a_clear_error(sluice, s3):
    env = env_with(s3, AWS_ACCESS_KEY_ID="nobody", AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    proc = run(sluice, env, "schema", f"s3://{BUCKET}/t.csv")
    check_clean_failure(proc)
    assert "403" in proc.stderr.decode() or "401" in proc.stderr.decode()


def test_anonymous_request_is_refused_with_a_hint(sluice, s3):
    proc = run(sluice, env_with(s3), "schema", f"s3://{BUCKET}/t.csv")
    check_clean_failure(proc)
    assert "no AWS credentials" in proc.stderr.decode(), proc.stderr.decode()


def test_missing_object(sluice, s3):
    proc = run(sluice, creds(s3), "schema", f"s3://{BUCKET}/absent.csv")
    check_clean_failure(proc)
    assert "404" in proc.stderr.decode()


def test_bad_location(sluice, s3):
    proc = run(sluice, creds(s3), "schema", f"s3://{BUCKET}")
    check_clean_failure(proc)
    assert "s3://BUCKET/KEY" in proc.stderr.decode()


def test_profile_from_shared_files(sluice, s3, tmp_path):
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n"
        f"[test]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    (home / ".aws" / "config").write_text(
        "[default]\nregion = eu-west-1\n\n"
        f"[profile test]\nregion = us-east-1\nendpoint_url = {s3['endpoint']}\n")
    env = dict(s3["base_env"], HOME=str(home), AWS_PROFILE="test")
    local = local_table(sluice, s3["local"] / "t.arrows", tmp_path / "l.arrows", [])
    assert read_s3(sluice, env, "t.arrows", tmp_path / "r.arrows", []).equals(local)
    # The default profile's keys are wrong: without AWS_PROFILE the read fails.
    env = dict(s3["base_env"], HOME=str(home), AWS_ENDPOINT_URL=s3["endpoint"])
    proc = run(sluice, env, "schema", f"s3://{BUCKET}/t.arrows")
    check_clean_failure(proc)


def test_endpoint_url_s3_wins(sluice, s3, tmp_path):
    env = creds(s3, AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_ENDPOINT_URL_S3=s3["endpoint"])
    local = local_table(sluice, s3["local"] / "t.csv", tmp_path / "l.arrows", [])
    assert read_s3(sluice, env, "t.csv", tmp_path / "r.arrows", []).equals(local)


def test_session_token_is_signed(sluice, s3, tmp_path):
    """The token goes out as a signed X-Amz-Security-Token header. s3s-fs has
    no STS: it checks the signature over that header, not the token itself."""
    env = creds(s3, AWS_SESSION_TOKEN="FQoGZXIvYXdzEXAMPLETOKEN//+=")
    local = local_table(sluice, s3["local"] / "t.arrows", tmp_path / "l.arrows", [])
    assert read_s3(sluice, env, "t.arrows", tmp_path / "r.arrows", []).equals(local)


# ---- Writing -------------------------------------------------------------------


def read_local(sluice, path, out: Path, extra=()):
    proc = subprocess.run([sluice.binary, "convert", str(path), str(out), "-t", "arrows", "-q",
                           *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return ipc.open_stream(out.read_bytes()).read_all()


@pytest.mark.parametrize("ext", ["arrow", "arrows", "csv", "avro"])
def test_write_every_format(sluice, s3, tmp_path, ext):
    src = s3["local"] / "t.arrows"
    key = f"out/w.{ext}"
    proc = run(sluice, creds(s3), "convert", src, f"s3://{BUCKET}/{key}", "-q")
    assert proc.returncode == 0, proc.stderr.decode()
    stored = s3["data"] / BUCKET / key
    assert stored.is_file()
    local_out = tmp_path / f"w.{ext}"
    subprocess.run([sluice.binary, "convert", str(src), str(local_out), "-q"], check=True)
    expected = read_local(sluice, local_out, tmp_path / "e.arrows")
    assert read_s3(sluice, creds(s3), key, tmp_path / "r.arrows", []).equals(expected)
    assert read_local(sluice, stored, tmp_path / "s.arrows").equals(expected)


def test_multipart_upload(sluice, s3, tmp_path):
    """An output several times the part size goes up in parts, in parallel;
    the stored object is byte for byte the local output."""
    src = tmp_path / "big.lenprefix"
    from test_http import write_lenprefix
    write_lenprefix(src, 700_000, 11)  # ~17 MB of Arrow output
    local_out = tmp_path / "big.arrows"
    subprocess.run([sluice.binary, "convert", str(src), str(local_out), "-q", "-O",
                    "length_prefix=u8"], check=True)
    assert local_out.stat().st_size > 3 * (5 << 20)
    env = creds(s3, SLUICE_S3_PART_SIZE=str(5 << 20))
    proc = run(sluice, env, "convert", src, f"s3://{BUCKET}/out/big.arrows", "-q", "-O",
               "length_prefix=u8")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (s3["data"] / BUCKET / "out" / "big.arrows").read_bytes() == local_out.read_bytes()


def test_failed_write_leaves_no_object(sluice, s3, tmp_path):
    bad = tmp_path / "cut.lenprefix"
    bad.write_bytes(bytes([5]) + b"hello" + bytes([9]) + b"abc")  # truncated last message
    proc = run(sluice, creds(s3), "convert", bad, f"s3://{BUCKET}/out/cut.arrows", "-q")
    check_clean_failure(proc)
    assert not (s3["data"] / BUCKET / "out" / "cut.arrows").exists()
    env = env_with(s3, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY="wrong")
    proc = run(sluice, env, "convert", s3["local"] / "t.arrows", f"s3://{BUCKET}/out/denied.arrows",
               "-q")
    check_clean_failure(proc)
    assert "403" in proc.stderr.decode() and "credentials" in proc.stderr.decode()
    assert not (s3["data"] / BUCKET / "out" / "denied.arrows").exists()
