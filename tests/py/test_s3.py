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
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.ipc as ipc
import pytest

from conftest import MEASURES_RSS, check_clean_failure, peak_rss_kib
from servers import (S3_ACCESS_KEY, S3_SECRET_KEY, ConnectionCounter, free_port, s3s_fs_binary,
                     start_s3s_fs, stop)
from test_http import local_table, make_files

ACCESS_KEY, SECRET_KEY = S3_ACCESS_KEY, S3_SECRET_KEY
BUCKET = "data"


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
    proc = start_s3s_fs(binary, data, port, log, root / "server.log")
    home = root / "home"
    home.mkdir()
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    base_env["HOME"] = str(home)
    yield {"endpoint": f"http://127.0.0.1:{port}", "local": local, "files": files,
           "home": home, "base_env": base_env, "data": data, "binary": binary}
    stop(proc)
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
    assert "SignatureDoesNotMatch" in err, err  # S3's own code, from the GET's body


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
    assert "404" in proc.stderr.decode() and "NoSuchKey" in proc.stderr.decode()


def test_bad_location(sluice, s3):
    proc = run(sluice, creds(s3), "schema", f"s3://{BUCKET}")
    check_clean_failure(proc)
    assert "s3://BUCKET/KEY" in proc.stderr.decode()


def test_endpoint_without_a_scheme_is_named(sluice, s3):
    # The message read the endpoint from freed memory (it said endpoint '',
    # a use-after-free under ASan); it names the endpoint given.
    proc = run(sluice, creds(s3, AWS_ENDPOINT_URL="127.0.0.1:9"), "schema",
               f"s3://{BUCKET}/x.csv")
    check_clean_failure(proc)
    assert "endpoint '127.0.0.1:9' is not a URL" in proc.stderr.decode()


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


def test_profile_services_section_endpoint(sluice, s3, tmp_path):
    """A profile's `services = NAME` points at a [services NAME] section
    whose s3 block's endpoint_url wins over the profile's own, as boto3
    reads them (it went to the profile's endpoint, or to AWS)."""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        f"[svc]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    (home / ".aws" / "config").write_text(
        "[profile svc]\nregion = us-east-1\nendpoint_url = http://127.0.0.1:9\n"
        "services = local-s3\n\n"
        f"[services local-s3]\ns3 =\n  endpoint_url = {s3['endpoint']}\n")
    env = dict(s3["base_env"], HOME=str(home), AWS_PROFILE="svc")
    boto3 = pytest.importorskip("boto3")
    saved = {k: os.environ.get(k) for k in ("HOME", "AWS_PROFILE", "AWS_ENDPOINT_URL")}
    os.environ.update(HOME=str(home), AWS_PROFILE="svc")
    os.environ.pop("AWS_ENDPOINT_URL", None)
    try:
        assert boto3.session.Session().client("s3").meta.endpoint_url == s3["endpoint"]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    local = local_table(sluice, s3["local"] / "t.csv", tmp_path / "l.arrows", [])
    assert read_s3(sluice, env, "t.csv", tmp_path / "r.arrows", []).equals(local)


def test_cli_settings_override_the_environment(sluice, s3, tmp_path):
    """--profile and --endpoint-url win over AWS_* variables that would fail
    (no keys, a dead endpoint): the read succeeds only if both overrides are
    used (s3s-fs checks the signature). --region is seen in the credential
    scope in test_region_option_signs_for_that_region."""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        f"[ci]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    env = dict(s3["base_env"], HOME=str(home), AWS_ENDPOINT_URL="http://127.0.0.1:9",
               AWS_REGION="eu-west-3")
    local = local_table(sluice, s3["local"] / "t.csv", tmp_path / "l.arrows", [])
    flags = ["--profile", "ci", "--region", "us-east-1", "--endpoint-url", s3["endpoint"]]
    assert read_s3(sluice, env, "t.csv", tmp_path / "r.arrows", flags).equals(local)
    for dropped in (0, 4):  # without the profile or the endpoint, it fails
        proc = run(sluice, env, "schema", f"s3://{BUCKET}/t.csv",
                   *(flags[:dropped] + flags[dropped + 2:]))
        check_clean_failure(proc)
    # Writes too, with a part size option: multipart from 5 MiB.
    src = tmp_path / "big.lenprefix"
    from test_http import write_lenprefix
    write_lenprefix(src, 400_000, 11)
    proc = run(sluice, env, "convert", src, f"s3://{BUCKET}/out/opts.arrows", "-q", "-O",
               "length_prefix=u8", "--part-size", "5M", *flags)
    assert proc.returncode == 0, proc.stderr.decode()
    local_out = tmp_path / "opts.arrows"
    subprocess.run([sluice.binary, "convert", str(src), str(local_out), "-q", "-O",
                    "length_prefix=u8"], check=True)
    assert (s3["data"] / BUCKET / "out" / "opts.arrows").read_bytes() == local_out.read_bytes()


def test_named_profile_must_exist(sluice, s3, tmp_path):
    """A profile asked for by name that neither file has is an error naming
    it (AWS tools say "profile not found"), not a silent anonymous read."""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "config").write_text("[default]\nregion = us-east-1\n")
    for env, extra in ((dict(creds(s3), HOME=str(home), AWS_PROFILE="nosuch"), []),
                       (dict(creds(s3), HOME=str(home)), ["--profile", "nosuch"])):
        proc = run(sluice, env, "schema", f"s3://{BUCKET}/t.csv", *extra)
        check_clean_failure(proc)
        assert "profile 'nosuch' not found" in proc.stderr.decode(), proc.stderr.decode()


PEER_PARTIAL = r"""
import boto3, botocore.exceptions
try:
    boto3.client("s3", region_name="us-east-1").get_object(Bucket="data", Key="t.csv")
    print("ok")
except botocore.exceptions.PartialCredentialsError as e:
    print("partial", e.kwargs["cred_var"])
"""


@pytest.mark.parametrize("present,missing", [("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
                                             ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID")])
def test_half_a_key_pair_in_the_environment_is_an_error(sluice, s3, tmp_path, present, missing):
    """AWS_ACCESS_KEY_ID without AWS_SECRET_ACCESS_KEY (or the other way
    round) is refused naming the missing variable, as boto3's
    PartialCredentialsError for the key id; it was ignored, and the [default] profile's keys
    (another identity) signed the read and the write."""
    pytest.importorskip("boto3")
    import sys
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        f"[default]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    env = env_with(s3, HOME=str(home), **{present: "AKIAOTHERACCOUNT"})
    peer = subprocess.run([sys.executable, "-c", PEER_PARTIAL], capture_output=True, timeout=60,
                          env=dict(env, AWS_EC2_METADATA_DISABLED="true"))
    # boto3 refuses a lone key id; a lone secret it ignores (and reads with
    # [default]'s keys), which sluice refuses too: it is the same mistake.
    expected = ["partial", missing] if present == "AWS_ACCESS_KEY_ID" else ["ok"]
    assert peer.stdout.decode().split() == expected, peer.stderr.decode()
    for args in (("schema", f"s3://{BUCKET}/t.csv"),
                 ("convert", s3["local"] / "t.csv", f"s3://{BUCKET}/out/partial.csv", "-q")):
        proc = run(sluice, env, *args)
        check_clean_failure(proc)
        err = proc.stderr.decode()
        assert f"{present} is set but {missing} is not" in err, err
    assert not (s3["data"] / BUCKET / "out" / "partial.csv").exists()
    # Unsigned requests need no keys: half a pair does not matter then.
    proc = run(sluice, env, "schema", f"s3://{BUCKET}/t.csv", "--no-sign-request")
    assert "is set but" not in proc.stderr.decode()


@pytest.mark.parametrize("section,setting", [
    ("[profile p]\ncredential_process = {script}\n", "credential_process"),
    ("[profile p]\nrole_arn = arn:aws:iam::123456789012:role/r\nsource_profile = base\n"
     "[profile base]\naws_access_key_id = {0}\naws_secret_access_key = {1}\n", "role_arn"),
    ("[profile p]\nsso_session = s\nsso_account_id = 1\nsso_role_name = r\n"
     "[sso-session s]\nsso_start_url = https://x.awsapps.com/start\nsso_region = us-east-1\n",
     "sso_session"),
    ("[profile p]\nsso_start_url = https://x.awsapps.com/start\nsso_region = us-east-1\n",
     "sso_start_url"),
    # A role is assumed before the profile's own keys are looked at (botocore).
    ("[profile p]\nrole_arn = arn:aws:iam::123456789012:role/r\nsource_profile = p\n"
     "aws_access_key_id = {0}\naws_secret_access_key = {1}\n", "role_arn"),
])
def test_profile_with_an_unsupported_provider_is_an_error(sluice, s3, tmp_path, section,
                                                          setting):
    """A profile whose credentials come from a process, a role or SSO is
    refused at open, naming the profile and the setting and what sluice
    reads; requests went out unsigned and the 403 hint said to set
    AWS_PROFILE, which was set. (boto3 reads the credential_process profile;
    sluice does not implement these providers.)"""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    script = tmp_path / "creds.sh"
    script.write_text("#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": \"%s\", "
                      "\"SecretAccessKey\": \"%s\"}'\n" % GOOD_KEYS)
    script.chmod(0o755)
    (home / ".aws" / "config").write_text(section.format(*GOOD_KEYS, script=script))
    env = env_with(s3, HOME=str(home), AWS_PROFILE="p")
    if setting == "credential_process" and shutil.which("sh"):
        pytest.importorskip("boto3")
        assert peer_get(env, None, s3["endpoint"], "t.csv") == "ok"
    for args in (("schema", f"s3://{BUCKET}/t.csv"),
                 ("convert", s3["local"] / "t.csv", f"s3://{BUCKET}/out/provider.csv", "-q"),
                 ("schema", f"s3://{BUCKET}/dir/", "--profile", "p")):
        proc = run(sluice, env, *args)
        check_clean_failure(proc)
        err = proc.stderr.decode()
        assert f"AWS profile 'p' gets its credentials through {setting}" in err, err
        assert "static keys" in err and "AWS_ACCESS_KEY_ID" in err, err
    # Keys in the environment win over the profile, as in AWS tools.
    proc = run(sluice, dict(env, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY),
               "schema", f"s3://{BUCKET}/t.csv")
    assert proc.returncode == 0, proc.stderr.decode()


def test_named_profile_without_keys_says_so(sluice, s3, tmp_path):
    """A profile asked for by AWS_PROFILE or --profile that has no keys (a
    region only) sends unsigned requests, as boto3 would find no
    credentials; the 403's hint names the profile instead of saying to set
    AWS_PROFILE, which is set."""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "config").write_text("[profile p]\nregion = us-east-1\n")
    for env, extra in ((env_with(s3, HOME=str(home), AWS_PROFILE="p"), []),
                       (env_with(s3, HOME=str(home)), ["--profile", "p"])):
        proc = run(sluice, env, "schema", f"s3://{BUCKET}/t.csv", *extra)
        check_clean_failure(proc)
        err = proc.stderr.decode()
        assert "AWS profile 'p' has no aws_access_key_id" in err and "set AWS_PROFILE" not in err, err


def test_credential_process_beside_static_keys_uses_the_keys(sluice, s3, tmp_path):
    """Static keys in ~/.aws/credentials come before credential_process in
    botocore's chain: such a profile reads with its keys, in boto3 and
    sluice."""
    pytest.importorskip("boto3")
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        f"[p]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    (home / ".aws" / "config").write_text("[profile p]\ncredential_process = /nonexistent\n")
    env = env_with(s3, HOME=str(home), AWS_PROFILE="p")
    assert peer_get(env, None, s3["endpoint"], "t.csv") == "ok"
    proc = run(sluice, env, "schema", f"s3://{BUCKET}/t.csv")
    assert proc.returncode == 0, proc.stderr.decode()


PEER_GET = r"""
import sys, boto3, botocore.exceptions
profile, endpoint, key = sys.argv[1:4]
session = boto3.Session(profile_name=profile) if profile else boto3.Session()
try:
    session.client("s3", endpoint_url=endpoint).get_object(Bucket="data", Key=key)["Body"].read()
    print("ok")
except botocore.exceptions.ClientError as e:
    print(e.response["Error"]["Code"])
except botocore.exceptions.NoCredentialsError:
    print("NoCredentials")
"""


def peer_get(env, profile, endpoint, key) -> str:
    """boto3's get_object under `env` ("ok" or S3's error code), with a
    profile named explicitly (Session(profile_name=...)) when not None."""
    import sys
    proc = subprocess.run([sys.executable, "-c", PEER_GET, profile or "", endpoint, key],
                          env=dict(env, AWS_EC2_METADATA_DISABLED="true"), capture_output=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode().strip()


def test_explicit_profile_wins_over_keys_in_the_environment(sluice, s3, tmp_path):
    """A profile given by name (--profile) takes its keys from the files even
    when AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are set, as boto3's
    Session(profile_name=...) and `aws --profile` do; AWS_PROFILE does not:
    then the environment's keys win, as in boto3. Here the profile's keys are
    right and the environment's wrong, then the other way round."""
    pytest.importorskip("boto3")
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    good = f"aws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
    bad = "aws_access_key_id = wrongkey\naws_secret_access_key = wrongsecret\n"
    for profile_keys, env_keys, expected in ((good, ("envkey", "envsecret"), "ok"),
                                             (bad, (ACCESS_KEY, SECRET_KEY), "denied")):
        (home / ".aws" / "credentials").write_text(f"[other]\n{profile_keys}")
        env = env_with(s3, HOME=str(home), AWS_ACCESS_KEY_ID=env_keys[0],
                       AWS_SECRET_ACCESS_KEY=env_keys[1])
        peer = peer_get(env, "other", s3["endpoint"], "t.csv")
        assert (peer == "ok") == (expected == "ok"), peer
        proc = run(sluice, env, "schema", f"s3://{BUCKET}/t.csv", "--profile", "other")
        assert (proc.returncode == 0) == (expected == "ok"), proc.stderr.decode()
        # AWS_PROFILE: the environment's keys win, in boto3 and in sluice.
        env["AWS_PROFILE"] = "other"
        peer = peer_get(env, None, s3["endpoint"], "t.csv")
        assert (peer == "ok") == (expected != "ok"), peer
        proc = run(sluice, env, "schema", f"s3://{BUCKET}/t.csv")
        assert (proc.returncode == 0) == (expected != "ok"), proc.stderr.decode()


GOOD_KEYS = (ACCESS_KEY, SECRET_KEY)
BAD_KEYS = ("wrongkey", "wrongsecret")


@pytest.mark.parametrize("credentials,config,expected", [
    # Option names in any case, ':' as the separator (Python's configparser).
    ("[default]\nAWS_ACCESS_KEY_ID = {0}\nAws_Secret_Access_Key = {1}\n", None, "ok"),
    ("[default]\naws_access_key_id: {0}\naws_secret_access_key:{1}\n", None, "ok"),
    ("[default]\naws_access_key_id : {0}\naws_secret_access_key = {1}\n", None, "ok"),
    # [profile default] in the config file is the default profile; a later
    # section of the same profile replaces an earlier one.
    (None, "[profile default]\naws_access_key_id = {0}\naws_secret_access_key = {1}\n", "ok"),
    (None, "[default]\naws_access_key_id = {2}\naws_secret_access_key = {3}\n"
           "[profile default]\naws_access_key_id = {0}\naws_secret_access_key = {1}\n", "ok"),
    (None, "[profile default]\naws_access_key_id = {0}\naws_secret_access_key = {1}\n"
           "[default]\nregion = us-east-1\n", "denied"),
    # Section names keep their case; "profile" is not the config's [default].
    ("[Default]\naws_access_key_id = {0}\naws_secret_access_key = {1}\n", None, "denied"),
    (None, "[profile  \"default\"]\naws_access_key_id = {0}\naws_secret_access_key = {1}\n", "ok"),
])
def test_shared_files_read_as_the_aws_cli_reads_them(sluice, s3, tmp_path, credentials, config,
                                                     expected):
    """~/.aws/credentials and ~/.aws/config as botocore (and the AWS CLI)
    read them with configparser: sluice gets the same keys as boto3 (both
    read, or both are refused: "denied" = no keys or the wrong ones)."""
    pytest.importorskip("boto3")
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    for name, text in (("credentials", credentials), ("config", config)):
        if text is not None:
            (home / ".aws" / name).write_text(text.format(*GOOD_KEYS, *BAD_KEYS))
    env = env_with(s3, HOME=str(home))
    peer = peer_get(env, None, s3["endpoint"], "t.csv")
    assert (peer == "ok") == (expected == "ok"), peer
    proc = run(sluice, env, "schema", f"s3://{BUCKET}/t.csv")
    assert (proc.returncode == 0) == (expected == "ok"), proc.stderr.decode()


@pytest.mark.parametrize("credentials,config,token", [
    # keys in credentials, a stale token in config: no token (botocore takes
    # key, secret and token from the one file that has the key)
    ("[default]\naws_access_key_id = {0}\naws_secret_access_key = {1}\n",
     "[default]\nregion = us-east-1\naws_session_token = STALE\n", None),
    ("[default]\naws_access_key_id = {0}\naws_secret_access_key = {1}\n"
     "aws_session_token = FRESH\n", "[default]\naws_session_token = STALE\n", "FRESH"),
    (None, "[default]\naws_access_key_id = {0}\naws_secret_access_key = {1}\n"
           "aws_session_token = FROMCONFIG\n", "FROMCONFIG"),
])
def test_session_token_comes_with_its_keys(sluice, s3, observed, tmp_path, credentials, config,
                                           token):
    """The token sent is the one in the file the keys came from, as boto3
    sends it (a stale token in ~/.aws/config went out with keys from
    ~/.aws/credentials, which AWS refuses)."""
    pytest.importorskip("boto3")
    counter, host = observed
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    for name, text in (("credentials", credentials), ("config", config)):
        if text is not None:
            (home / ".aws" / name).write_text(text.format(*GOOD_KEYS))
    env = env_with(s3, HOME=str(home), AWS_ENDPOINT_URL=f"http://{host}")
    peer_get(env, None, f"http://{host}", "t.csv")  # (whatever s3s-fs answers)
    peer_tokens = [r["headers"].get("x-amz-security-token") for r in counter.requests]
    counter.requests.clear()
    run(sluice, env, "schema", f"s3://{BUCKET}/t.csv")
    tokens = {r["headers"].get("x-amz-security-token") for r in counter.requests}
    assert peer_tokens and set(peer_tokens) == {token}, peer_tokens
    assert tokens == {token}, tokens


def test_no_sign_request_sends_no_credentials(sluice, s3):
    """--no-sign-request makes unsigned requests even with keys in the
    environment: s3s-fs, which wants them signed, refuses, and the message
    says the request was anonymous."""
    proc = run(sluice, creds(s3), "schema", f"s3://{BUCKET}/t.csv", "--no-sign-request")
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "403" in err and "unsigned" in err, err
    assert run(sluice, creds(s3), "schema", f"s3://{BUCKET}/t.csv").returncode == 0


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


DEFAULT_PORT_SCRIPT = r"""
import json, subprocess, sys
sys.path[:0] = sys.argv[1:3]
from pathlib import Path
from servers import S3_ACCESS_KEY, S3_SECRET_KEY, start_s3s_fs, stop
from test_http import make_cert, start_nginx_tls
binary, data, sluice, src, root = sys.argv[3:8]
root = Path(root)
log_path = root / "s3s.log"
log = open(log_path, "wb")
s3s = start_s3s_fs(binary, Path(data), 80, log, log_path)
key, cert = make_cert(root, "server")
nginx = start_nginx_tls(root, 443, cert, key, '''
    client_max_body_size 0;
    location / {
      proxy_pass http://127.0.0.1:80;
      proxy_set_header Host $http_host;
    }''')
import boto3
out = []
for ep in ("http://127.0.0.1:80", "https://localhost:443"):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "AWS_ENDPOINT_URL": ep,
           "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": S3_ACCESS_KEY,
           "AWS_SECRET_ACCESS_KEY": S3_SECRET_KEY}
    peer = boto3.client("s3", endpoint_url=ep, verify=str(cert), region_name="us-east-1",
                        aws_access_key_id=S3_ACCESS_KEY, aws_secret_access_key=S3_SECRET_KEY)
    body = peer.get_object(Bucket="data", Key="t.csv")["Body"].read()
    out.append([ep, "boto3", 0, str(len(body))])
    ca = ["--ca-bundle", str(cert)]
    for what, args in (("read", ["schema", "s3://data/t.csv"]),
                       ("list", ["schema", "s3://data/dir/"]),
                       ("write", ["convert", src, f"s3://data/out/port{ep.rsplit(':', 1)[1]}/t.csv", "-q"])):
        p = subprocess.run([sluice, *args, *ca], env=env, capture_output=True)
        out.append([ep, what, p.returncode, p.stderr.decode(errors="replace")[-400:]])
stop(nginx)
stop(s3s)
print(json.dumps(out))
"""


def test_endpoint_with_its_default_port(sluice, s3, tmp_path):
    """An endpoint URL that spells out the scheme's default port
    (http://host:80, https://host:443) reads, lists and writes, as boto3
    does: libcurl sends "Host: host" without the port, so that is the host to
    sign (s3s-fs checks). Ports 80 and 443 are ours to bind only in a network
    namespace of our own (unshare -n), where s3s-fs and nginx (TLS, in front
    of it) listen on them."""
    pytest.importorskip("boto3")
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip for a private network namespace")
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (scripts/setup.sh installs nginx-light)")
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a network namespace: {probe.stderr.decode().strip()}")
    import json
    import sys
    here = Path(__file__).resolve().parent
    proc = subprocess.run(
        ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", sys.executable,
         "-c", DEFAULT_PORT_SCRIPT, str(here), str(here.parent), s3["binary"], str(s3["data"]),
         sluice.binary, str(s3["local"] / "t.csv"), str(tmp_path)],
        capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    results = json.loads(proc.stdout)
    assert len(results) == 8, results
    for ep, what, rc, err in results:
        assert rc == 0, f"{ep} {what}: {err}"
    local = tmp_path / "local.csv"
    subprocess.run([sluice.binary, "convert", str(s3["local"] / "t.csv"), str(local), "-q"],
                   check=True)
    for port in ("80", "443"):
        assert (s3["data"] / BUCKET / "out" / f"port{port}" / "t.csv").read_bytes() == \
            local.read_bytes()


# ---- Writing -------------------------------------------------------------------


def read_local(sluice, path, out: Path, extra=()):
    proc = subprocess.run([sluice.binary, "convert", str(path), str(out), "-t", "arrows", "-q",
                           *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return ipc.open_stream(out.read_bytes()).read_all()


@pytest.mark.parametrize("ext", ["arrow", "arrows", "csv", "avro", "csv.gz", "csv.zst"])
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
    # (with a suffix, as every size option takes it: "5m" was ignored, 8 MiB parts)
    env = creds(s3, SLUICE_S3_PART_SIZE="5m")
    proc = run(sluice, env, "convert", src, f"s3://{BUCKET}/out/big.arrows", "-q", "-O",
               "length_prefix=u8")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (s3["data"] / BUCKET / "out" / "big.arrows").read_bytes() == local_out.read_bytes()
    # a value that is no size is an error (it was the default, silently)
    proc = run(sluice, creds(s3, SLUICE_S3_PART_SIZE="abc"), "convert", src,
               f"s3://{BUCKET}/out/bad.arrows", "-q", "-O", "length_prefix=u8")
    check_clean_failure(proc)
    assert b"SLUICE_S3_PART_SIZE='abc' is not a size" in proc.stderr, proc.stderr
    assert not (s3["data"] / BUCKET / "out" / "bad.arrows").exists()


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


def test_staging_leaves_tmpdir_as_it_was(sluice, s3, tmp_path):
    """The output is staged in a new, at once unlinked file of TMPDIR: what
    other users left there (the name an earlier version always used, here a
    FIFO that would have taken the bytes, or a directory) does not matter,
    and nothing is left behind, whether the write succeeds or fails."""
    staging = tmp_path / "tmp"
    staging.mkdir()
    os.mkfifo(staging / "sluice-s3-upload")
    (staging / ".sluice-s3-upload.tmp-XXXXXX").mkdir()
    before = sorted(p.name for p in staging.iterdir())
    env = creds(s3, TMPDIR=str(staging))
    proc = run(sluice, env, "convert", s3["local"] / "t.arrows", f"s3://{BUCKET}/out/staged.csv",
               "-q")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (s3["data"] / BUCKET / "out" / "staged.csv").exists()
    bad = tmp_path / "cut.lenprefix"
    bad.write_bytes(bytes([5]) + b"hello" + bytes([9]) + b"abc")  # truncated last message
    proc = run(sluice, env, "convert", bad, f"s3://{BUCKET}/out/cut2.arrows", "-q")
    check_clean_failure(proc)
    assert sorted(p.name for p in staging.iterdir()) == before


# ---- S3 over TLS: nginx (TLS, self-signed) in front of s3s-fs --------------------
#
# The proxy passes the Host header through, so the signatures sluice makes for
# https://localhost:PORT are the ones s3s-fs checks. Reads, listings, single
# PUTs and multipart uploads all go through it; without the CA (or
# --insecure) each is a clear TLS error, and a refused write leaves nothing.


@pytest.fixture(scope="module")
def s3_tls(s3, tmp_path_factory):
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (scripts/setup.sh installs nginx-light)")
    from test_http import make_cert, start_nginx_tls
    root = tmp_path_factory.mktemp("s3tls")
    key, cert = make_cert(root, "server")
    port = free_port()
    upstream = s3["endpoint"].split("://", 1)[1]
    proc = start_nginx_tls(root, port, cert, key, f"""
    client_max_body_size 0;
    location / {{
      proxy_pass http://{upstream};
      proxy_set_header Host $http_host;
      proxy_request_buffering off;
      proxy_buffering off;
      proxy_http_version 1.1;
    }}""")
    yield {"endpoint": f"https://localhost:{port}", "cert": cert}
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def tls_creds(s3, s3_tls, **extra) -> dict:
    return creds(s3, AWS_ENDPOINT_URL=s3_tls["endpoint"], **extra)


@pytest.mark.parametrize("part_size", [None, 5 << 20])
def test_tls_write_read_and_list(sluice, s3, s3_tls, tmp_path, part_size):
    """A write over https with the CA given (one PUT, or a multipart upload)
    stores the same bytes as a local write, and reads and listings over
    https give them back."""
    src = tmp_path / "big.lenprefix"
    from test_http import write_lenprefix
    write_lenprefix(src, 700_000, 5)
    local_out = tmp_path / "big.arrows"
    subprocess.run([sluice.binary, "convert", str(src), str(local_out), "-q", "-O",
                    "length_prefix=u8"], check=True)
    env = tls_creds(s3, s3_tls, SLUICE_S3_PART_SIZE=str(part_size or (64 << 20)))
    key = f"tls/{part_size}/big.arrows"
    ca = ["--ca-bundle", str(s3_tls["cert"])]
    proc = run(sluice, env, "convert", src, f"s3://{BUCKET}/{key}", "-q", "-O",
               "length_prefix=u8", *ca)
    assert proc.returncode == 0, proc.stderr.decode()
    assert (s3["data"] / BUCKET / key).read_bytes() == local_out.read_bytes()
    expected = ipc.open_stream(local_out.read_bytes()).read_all()
    assert read_s3(sluice, env, key, tmp_path / "r.arrows", ca).equals(expected)
    listed = read_s3(sluice, env, f"tls/{part_size}/", tmp_path / "l.arrows", ca)
    assert listed.equals(expected)


def test_tls_untrusted_write_is_refused(sluice, s3, s3_tls, tmp_path):
    src = s3["local"] / "t.arrows"
    env = tls_creds(s3, s3_tls)
    key = "tls/refused.arrows"
    proc = run(sluice, env, "convert", src, f"s3://{BUCKET}/{key}", "-q")
    check_clean_failure(proc)
    err = proc.stderr.decode().lower()
    assert "certificate" in err or "ssl" in err or "tls" in err, err
    assert not (s3["data"] / BUCKET / key).exists()
    # --insecure skips the check, for writes as for reads.
    proc = run(sluice, env, "convert", src, f"s3://{BUCKET}/{key}", "-q", "--insecure")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (s3["data"] / BUCKET / key).is_file()
    proc = run(sluice, env, "schema", f"s3://{BUCKET}/tls/", "-q")
    check_clean_failure(proc)


def test_part_size_over_s3s_limit_is_refused(sluice, s3, tmp_path):
    """A part size over S3's 5 GiB a part is refused before the output is
    written, from --part-size as from SLUICE_S3_PART_SIZE (only the
    variable was checked: --part-size 6g went up, for S3 to refuse its
    first part once the whole output was staged); 5g itself is taken (this
    output then goes up in one PUT, the bytes of a local write)."""
    src = s3["local"] / "t.arrows"
    key = "out/part-size.arrows"
    for args, env, named in (
            (["--part-size", "6g"], creds(s3),
             "part size 6442450944 bytes (part_size; CLI --part-size)"),
            ([], creds(s3, SLUICE_S3_PART_SIZE="6g"), "SLUICE_S3_PART_SIZE='6g'")):
        proc = run(sluice, env, "convert", src, f"s3://{BUCKET}/{key}", "-q", *args)
        check_clean_failure(proc)
        err = proc.stderr.decode()
        assert (f"s3://{BUCKET}/{key}: {named} is more than S3 takes in one part: at most 5g "
                "(5 GiB, 5368709120 bytes)") in err, err
        assert not (s3["data"] / BUCKET / key).exists()
    local_out = tmp_path / "local.arrows"
    subprocess.run([sluice.binary, "convert", str(src), str(local_out), "-q"], check=True)
    proc = run(sluice, creds(s3), "convert", src, f"s3://{BUCKET}/{key}", "-q", "--part-size", "5g")
    assert proc.returncode == 0, proc.stderr.decode()
    assert (s3["data"] / BUCKET / key).read_bytes() == local_out.read_bytes()


def test_tls_hint_on_every_kind_of_request(sluice, s3, s3_tls, tmp_path):
    """An untrusted certificate is the same TLS error, with how to trust
    it, whichever request meets it: an object's GET, a listing, a PUT, a
    multipart upload's first request (listings and writes gave libcurl's
    words alone). The reason is curl's own for the endpoint."""
    proc = subprocess.run(["curl", "-sS", "-o", os.devnull, s3_tls["endpoint"] + "/"],
                          stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 60, proc.stderr  # CURLE_PEER_FAILED_VERIFICATION
    why = proc.stderr.decode().split("\n", 1)[0].split(") ", 1)[1]
    hint = ("(ca_bundle=FILE names the CA, insecure=True skips verification; CLI: --ca-bundle "
            "FILE, --insecure)")
    from test_http import write_lenprefix
    big = tmp_path / "big.lenprefix"
    write_lenprefix(big, 250_000, 3)  # more than one 5 MiB part of Arrow output
    env = tls_creds(s3, s3_tls)
    for args, what in (
            (["schema", f"s3://{BUCKET}/t.csv"], f"s3://{BUCKET}/t.csv: GET"),
            (["schema", f"s3://{BUCKET}/dir/*"],
             f"s3://{BUCKET}/dir/*: listing bucket '{BUCKET}' under prefix 'dir/'"),
            (["convert", s3["local"] / "t.arrows", f"s3://{BUCKET}/tls/hint.arrows", "-q"],
             f"s3://{BUCKET}/tls/hint.arrows: PutObject"),
            (["convert", big, f"s3://{BUCKET}/tls/hint-big.arrows", "-q", "-O",
              "length_prefix=u8", "--part-size", "5m"],
             f"s3://{BUCKET}/tls/hint-big.arrows: CreateMultipartUpload")):
        proc = run(sluice, env, *args)
        check_clean_failure(proc)
        err = proc.stderr.decode()
        assert f"{what}: TLS error: {why} {hint}" in err, (args, err)
    assert not (s3["data"] / BUCKET / "tls" / "hint.arrows").exists()
    assert not (s3["data"] / BUCKET / "tls" / "hint-big.arrows").exists()


# ---- Listing prefixes and globs (ListObjectsV2) ------------------------------------
#
# Objects laid under ls/ in the bucket are read through a prefix or a glob,
# and compared with pyarrow's read of the same local files, concatenated in
# key order. s3s-fs answers ListObjectsV2 with the last key as continuation
# token, so small pages also send keys with special characters back as
# tokens. The answers s3s-fs never gives (entities as numeric references,
# directory markers, broken pages) come from a scripted server further down.

SPECIAL_KEYS = ["a b.csv", "c+d.csv", "e%20f.csv", "g&h.csv", "\u00fc \u00f1.csv",
                "q'u\"o<t>.csv", "x=y?z#w.csv", "\u65e5\u672c.csv"]


@pytest.fixture(scope="module")
def listing(s3):
    import pyarrow as pa
    import pyarrow.parquet as pq
    root = s3["data"] / BUCKET / "ls"
    pq_dir = root / "pq"
    (pq_dir / "sub").mkdir(parents=True)
    (pq_dir / "_tmp").mkdir()
    for i in range(8):
        n = 3 + i
        table = pa.table({"id": pa.array(range(100 * i, 100 * i + n), pa.int64()),
                          "name": [f"p{i}-r{j}-\u00e9" for j in range(n)],
                          "score": [None if j % 3 == 0 else j * 0.5 + i for j in range(n)]})
        pq.write_table(table, pq_dir / ("sub/part-7.parquet" if i == 7 else f"part-{i}.parquet"))
    pq.write_table(pa.table({"id": [1]}), pq_dir / "_tmp" / "part-9.parquet")  # not data
    (pq_dir / "_SUCCESS").write_bytes(b"")
    (pq_dir / ".part-0.parquet.crc").write_bytes(b"\x00garbage")
    csv_dir = root / "csv"
    for rel in ("z.csv", "a/x.csv", "b/c/y.csv", "_hidden/h.csv", "a/.h.csv"):
        (csv_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (csv_dir / rel).write_text("id,name\n" + "".join(f"{k},{rel}#{k}\n" for k in range(4)))
    (csv_dir / "notes.txt").write_text("not,csv\n")
    special = root / "special"
    special.mkdir()
    for i, key in enumerate(SPECIAL_KEYS):
        (special / key).write_text(f"id,name\n{i},{key.replace(chr(34), '')}\n")
    return root


def read_location(sluice, env, location, out: Path, *extra):
    proc = run(sluice, env, "convert", location, out, "-t", "arrows", "-q", *extra)
    assert proc.returncode == 0, f"{location}: {proc.stderr.decode()}"
    return ipc.open_stream(out.read_bytes()).read_all()


def peer_concat(paths, reader):
    """pyarrow's read of `paths`, concatenated in key (bytewise) order."""
    import pyarrow as pa
    ordered = sorted(paths, key=lambda p: p[0].encode())
    return pa.concat_tables([reader(path) for _, path in ordered])


def same_table(got, expected):
    assert got.column_names == expected.column_names
    assert got.num_rows == expected.num_rows
    assert got.to_pylist() == expected.to_pylist()


def pq_reader(path):
    import pyarrow.parquet as pq
    return pq.read_table(path)


def csv_reader(path):
    import pyarrow.csv as pacsv
    return pacsv.read_csv(path)


def keys_under(root: Path, pattern: str):
    return [(str(p.relative_to(root)), p) for p in root.glob(pattern) if p.is_file()]


@pytest.mark.parametrize("page", [None, "2"])
def test_list_prefix_reads_every_object_under_it(sluice, s3, listing, tmp_path, page):
    root = listing / "pq"
    files = [("part-%d.parquet" % i, root / f"part-{i}.parquet") for i in range(7)]
    files.append(("sub/part-7.parquet", root / "sub" / "part-7.parquet"))
    got = read_location(sluice, creds(s3, SLUICE_S3_LIST_PAGE=page), f"s3://{BUCKET}/ls/pq/",
                        tmp_path / "r.arrows")
    same_table(got, peer_concat(files, pq_reader))


@pytest.mark.parametrize("page", [None, "2"])
def test_list_glob(sluice, s3, listing, tmp_path, page):
    root = listing / "pq"
    files = [(f"part-{i}.parquet", root / f"part-{i}.parquet") for i in range(7)]
    got = read_location(sluice, creds(s3, SLUICE_S3_LIST_PAGE=page),
                        f"s3://{BUCKET}/ls/pq/*.parquet", tmp_path / "r.arrows")
    same_table(got, peer_concat(files, pq_reader))
    # A glob inside the name: only part-1 .. part-3.
    got = read_location(sluice, creds(s3, SLUICE_S3_LIST_PAGE=page),
                        f"s3://{BUCKET}/ls/pq/part-[1-3].parq*", tmp_path / "r.arrows")
    same_table(got, peer_concat(files[1:4], pq_reader))


@pytest.mark.parametrize("page", [None, "2"])
def test_list_globstar(sluice, s3, listing, tmp_path, page):
    root = listing / "csv"
    files = [(rel, root / rel) for rel in ("z.csv", "a/x.csv", "b/c/y.csv")]
    got = read_location(sluice, creds(s3, SLUICE_S3_LIST_PAGE=page),
                        f"s3://{BUCKET}/ls/csv/**/*.csv", tmp_path / "r.arrows")
    same_table(got, peer_concat(files, csv_reader))


@pytest.mark.parametrize("pattern", ["2024-*/", "*/", "**/"])
def test_list_glob_ending_in_slash_reads_objects_under_matching_directories(
        sluice, s3, tmp_path, pattern):
    """s3://bucket/tg/2024-*/ names the "directories" Python's glob (and
    DuckDB's) gives for the same tree on disk, and reads every object under
    them, not an object the glob matches itself (tg/2024-a.csv)."""
    import glob
    root = s3["data"] / BUCKET / "tg"
    for rel in ("2024-a.csv", "2024-b/x.csv", "2024-b/deep/w.csv", "2023-c/y.csv", "z.csv"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"id,name\n1,{rel}\n")
    dirs = [Path(d) for d in glob.glob(f"{root}/{pattern}", recursive=True)]
    assert dirs and all(d.is_dir() for d in dirs)
    files = [(str(p.relative_to(root)), p) for p in root.rglob("*.csv")
             if any(d in p.parents for d in dirs)]
    got = read_location(sluice, creds(s3), f"s3://{BUCKET}/tg/{pattern}", tmp_path / "r.arrows")
    same_table(got, peer_concat(files, csv_reader))


def read_counted(sluice, s3, location, out: Path, *extra, bytes_per_s=None, **env_extra):
    """read_location of `location` through a ConnectionCounter: (table, counter)."""
    counter = ConnectionCounter(int(s3["endpoint"].rsplit(":", 1)[1]), bytes_per_s)
    try:
        env = creds(s3, AWS_ENDPOINT_URL=f"http://127.0.0.1:{counter.port}", **env_extra)
        return read_location(sluice, env, location, out, *extra), counter
    finally:
        counter.close()


def _stream_object(s3, key: str, rows: int):
    """An Arrow IPC stream of about 20 bytes a row under `key`; pyarrow's table."""
    import pyarrow as pa
    path = s3["data"] / BUCKET / key
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({"id": pa.array(range(rows), pa.int64()),
                      "x": [i * 0.25 for i in range(rows)], "k": pa.array([i % 7 for i in
                                                                             range(rows)],
                                                                            pa.int32())})
    with ipc.new_stream(path, table.schema) as writer:
        writer.write_table(table, max_chunksize=10_000)
    return path, table


def test_fast_link_streams_an_object_in_one_get(sluice, s3, tmp_path):
    """A forward read over a link at least as fast as SLUICE_HTTP_FAST_LINK
    takes the object in one GET, however many readahead parts it spans (it
    was one GET per 8 MiB part, in parallel: on a server sharing the
    machine, more CPU and no more bandwidth; then the open's and one more)."""
    path, table = _stream_object(s3, "fast/s.arrows", 150_000)
    parts = path.stat().st_size // 65536
    assert parts > 40, parts
    got, counter = read_counted(sluice, s3, f"s3://{BUCKET}/fast/s.arrows", tmp_path / "r.arrows",
                                SLUICE_HTTP_PART_SIZE="65536", SLUICE_HTTP_FAST_LINK="1")
    same_table(got, table)
    assert counter.gets == 1, counter.gets  # the open is the download


def test_paused_reader_parks_the_download_and_resumes(sluice, s3, tmp_path):
    """A reader that stops for longer than SLUICE_HTTP_PARK_MS (here the
    consumer of `sluice cat` on a pipe pauses, with a small budget) ends the GET
    that streams the object where it stands and resumes with a new one,
    rather than holding a silent connection until a timeout: more GETs, the
    same values."""
    path, table = _stream_object(s3, "park/s.arrows", 1_000_000)  # 20 MB
    counter = ConnectionCounter(int(s3["endpoint"].rsplit(":", 1)[1]))
    try:
        # (a fast link: no helpers, the one GET parks)
        env = creds(s3, AWS_ENDPOINT_URL=f"http://127.0.0.1:{counter.port}",
                    SLUICE_HTTP_PART_SIZE="65536", SLUICE_HTTP_PARK_MS="100",
                    SLUICE_HTTP_FAST_LINK="1")
        proc = subprocess.Popen([sluice.binary, "-q", "--budget", "1M", "cat",
                                 f"s3://{BUCKET}/park/s.arrows", "-t", "arrows"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        chunks = [proc.stdout.read(65536)]
        time.sleep(1.0)  # the pipe, the budget and then the readahead fill up
        while chunk := proc.stdout.read(65536):
            chunks.append(chunk)
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0, err
    finally:
        counter.close()
    same_table(ipc.open_stream(b"".join(chunks)).read_all(), table)
    assert counter.gets > 1, counter.gets  # the download, then GETs resumed after parking


def test_slow_link_fetches_ranges_in_parallel(sluice, s3, tmp_path):
    """Over a slow link (here 8 MB/s per connection) the one streaming GET
    gets helpers: more connections fetch the parts ahead of it by ranged
    GETs, and the values are the same as pyarrow's."""
    path, table = _stream_object(s3, "slow/s.arrows", 150_000)
    got, counter = read_counted(sluice, s3, f"s3://{BUCKET}/slow/s.arrows", tmp_path / "r.arrows",
                                bytes_per_s=8e6, SLUICE_HTTP_PART_SIZE="65536")
    same_table(got, table)
    assert counter.accepted >= 3, counter.accepted  # the lead's (the open's), and helpers'
    assert counter.gets >= 5, counter.gets


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_objects_of_a_prefix_share_connections(sluice, s3, tmp_path, ext):
    """40 objects under one prefix are read over a few kept-alive connections
    (the dataset's sources share request handles), not one connection per
    object; the values are pyarrow's read of the same files."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    root = s3["data"] / BUCKET / "conn" / ext
    root.mkdir(parents=True)
    files = []
    for i in range(40):
        table = pa.table({"id": pa.array(range(10 * i, 10 * i + 10), pa.int64()),
                          "x": [i * 0.25 + j + 0.125 for j in range(10)]})
        path = root / f"part-{i:02d}.{ext}"
        (pq.write_table if ext == "parquet" else pacsv.write_csv)(table, path)
        files.append((path.name, path))
    got, counter = read_counted(sluice, s3, f"s3://{BUCKET}/conn/{ext}/", tmp_path / "r.arrows")
    same_table(got, peer_concat(files, pq_reader if ext == "parquet" else csv_reader))
    # One listing and 40 objects took 41 connections before; now the handles
    # in flight at once (8 objects opened together, a few readahead parts).
    assert counter.accepted <= 12, counter.accepted


def test_small_listed_objects_take_one_request_each(sluice, s3, tmp_path):
    """Objects of 64 to 256 KiB under a prefix: the listing gives their
    sizes, so each is fetched whole by its opening GET (one request per
    object, plus the listing) and read from memory; values are pyarrow's.
    Objects held whole take at most a quarter of the memory budget: with
    --budget 1M only one fits, the others are read by ranges."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    root = s3["data"] / BUCKET / "whole"
    root.mkdir(parents=True)
    files = []
    for i, n in enumerate((3000, 4000, 5000, 6000)):
        table = pa.table({"id": pa.array(range(n), pa.int64()),
                          "x": [j * 0.5 + 0.25 + i for j in range(n)],
                          "s": [f"row-{i}-{j}" for j in range(n)]})
        path = root / f"part-{i}.parquet"
        pq.write_table(table, path, compression="none")
        assert 65536 < path.stat().st_size <= 262144, path.stat().st_size
        files.append((path.name, path))
    got, counter = read_counted(sluice, s3, f"s3://{BUCKET}/whole/", tmp_path / "r.arrows")
    same_table(got, peer_concat(files, pq_reader))
    assert counter.gets == 1 + len(files), counter.gets
    got, counter = read_counted(sluice, s3, f"s3://{BUCKET}/whole/", tmp_path / "r.arrows",
                                "--budget", "1M")
    same_table(got, peer_concat(files, pq_reader))
    # Objects not held whole are read by ranges: the opening GET (their last
    # 64 KiB: Parquet opens by its footer) holds all of a small one, a larger
    # one takes another for its column chunks. Held whole, all took one.
    assert counter.gets > 1 + len(files), counter.gets


def test_opening_streamed_objects_fetches_only_their_heads(sluice, s3, tmp_path):
    """Every object of a prefix is opened before the scan. Objects a reader
    streams (Arrow IPC streams here) read their schema from the 64 KiB
    their opening GET brought, and start no download of the rest (each
    once fetched up to 32 MiB at open and held it until its turn: 20
    objects of 40 MB took 600 MB). The scan fetches each once, the next
    ones ahead of the one being decoded; values are pyarrow's."""
    import pyarrow as pa
    import pyarrow.ipc as paipc
    root = s3["data"] / BUCKET / "streams"
    root.mkdir(parents=True)
    files = []
    for i in range(5):
        n = 30_000 + 1000 * i
        table = pa.table({"id": pa.array(range(n), pa.int64()),
                          "x": [j * 0.5 + i for j in range(n)]})
        path = root / f"part-{i}.arrows"
        with paipc.new_stream(path, table.schema) as writer:
            writer.write_table(table, max_chunksize=8192)
        assert path.stat().st_size > 4 * 65536, path.stat().st_size
        files.append((path.name, path))
    location = f"s3://{BUCKET}/streams/"
    counter = ConnectionCounter(int(s3["endpoint"].rsplit(":", 1)[1]))
    try:
        env = creds(s3, AWS_ENDPOINT_URL=f"http://127.0.0.1:{counter.port}")
        proc = run(sluice, env, "schema", location)
        assert proc.returncode == 0, proc.stderr.decode()
        assert proc.stdout.decode().split() == ["id", "int64", "x", "double"], proc.stdout
        assert counter.gets == 1 + len(files), counter.gets  # the listing, one GET each
    finally:
        counter.close()
    got, counter = read_counted(sluice, s3, location, tmp_path / "r.arrows")
    same_table(got, peer_concat(files, lambda path: paipc.open_stream(path.read_bytes()).read_all()))
    # the listing; the first object's open is its download, the others'
    # opens fetch their heads, then the rest in one part
    assert counter.gets == 1 + 1 + 2 * (len(files) - 1), counter.gets


def test_remote_avro_splits_fetch_each_byte_once(sluice, s3, tmp_path):
    """An Avro object over s3:// splits by 8 MiB byte ranges, each fetched
    by one GET: a 6 MB object is the opening GET and one more (1 MiB splits
    took a GET each and fetched every byte twice). Values are fastavro's."""
    import fastavro
    import pyarrow as pa
    schema = {"type": "record", "name": "r",
              "fields": [{"name": "id", "type": "long"}, {"name": "x", "type": "double"},
                         {"name": "s", "type": "string"}]}
    rows = [{"id": i, "x": i * 0.25 + 0.125, "s": f"row {i}"} for i in range(250_000)]
    path = s3["data"] / BUCKET / "big.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, rows)
    assert 4 << 20 < path.stat().st_size < 8 << 20, path.stat().st_size
    got, counter = read_counted(sluice, s3, f"s3://{BUCKET}/big.avro", tmp_path / "r.arrows")
    with open(path, "rb") as f:
        expected = list(fastavro.reader(f))
    assert got.to_pylist() == expected
    assert got.schema.field("s").type == pa.string()
    assert counter.gets == 2, counter.gets


def test_parquet_chunks_of_a_row_group_come_in_one_request(sluice, s3, tmp_path):
    """The projected column chunks of a row group that lie together are
    fetched by one GET (they were one each): 2 row groups of 4 chunks are
    two requests after the opening GET and the footer's (one GET less when
    the format is named: the opening GET is the footer's). Columns a and c,
    with b's 400 KB between them, stay a request each, so that a projection
    never fetches a column it skips. (Two threads for two row groups: with
    more threads than row groups a row group is decoded by column parts,
    each fetching its own columns.) Values are pyarrow's."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    n = 100_000
    table = pa.table({name: [i * 0.5 + k for i in range(n)] for k, name in enumerate("abcd")})
    path = s3["data"] / BUCKET / "chunks.parquet"
    pq.write_table(table, path, compression="none", row_group_size=n // 2)
    assert pq.ParquetFile(path).metadata.num_row_groups == 2
    location = f"s3://{BUCKET}/chunks.parquet"
    got, counter = read_counted(sluice, s3, location, tmp_path / "all.arrows", "--threads", "2")
    same_table(got, table)
    assert counter.gets == 2 + 2, counter.gets
    got, counter = read_counted(sluice, s3, location, tmp_path / "ac.arrows", "--threads", "2",
                                "-c", "a,c")
    same_table(got, table.select(["a", "c"]))
    assert counter.gets == 2 + 2 * 2, counter.gets
    # Named as Parquet, the object opens by its last 64 KiB (a suffix range):
    # the footer comes with the opening GET, and the head is never asked for.
    got, counter = read_counted(sluice, s3, location, tmp_path / "named.arrows", "--threads", "2",
                                "-f", "parquet")
    same_table(got, table)
    assert counter.gets == 1 + 2, counter.gets


def test_memory_per_object_stays_small(sluice, s3, tmp_path):
    """Every object of a prefix is opened (footer read, splits planned)
    before the scan; what an object keeps until its turn is its metadata,
    not the 64 KiB edges fetched to open it (they once cost ~125 KiB of RSS
    per object: 10,000 objects, 1.2 GB). Objects over 256 KiB, so none is
    held whole; the values are pyarrow's."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    one = tmp_path / "one.parquet"
    n = 20_000
    pq.write_table(pa.table({"id": pa.array(range(n), pa.int64()),
                             "x": [i * 0.5 + 0.125 for i in range(n)],
                             "y": [(i * 7919) % 1000003 * 1.5 for i in range(n)]}),
                   one, compression="none")
    assert one.stat().st_size > 262144, one.stat().st_size
    counts = {"few": 20, "many": 220}
    rss, per_object = _rss_per_object(sluice, s3, one, "mem", counts, "schema")
    if MEASURES_RSS:
        assert per_object < 48, (rss, per_object)
    got = read_location(sluice, creds(s3), f"s3://{BUCKET}/mem/few/", tmp_path / "r.arrows")
    same_table(got, pa.concat_tables([pq.read_table(one)] * counts["few"]))


def _rss_per_object(sluice, s3, one: Path, top: str, counts: dict, *command):
    """Links `one` counts[prefix] times under s3://BUCKET/top/prefix/ (as
    part-NNN<suffixes>) and runs `sluice -q COMMAND s3://.../prefix/` on each:
    (peak RSS in KiB by prefix, KiB more per object from the fewest to the
    most)."""
    for prefix, count in counts.items():
        root = s3["data"] / BUCKET / top / prefix
        root.mkdir(parents=True)
        for i in range(count):
            os.link(one, root / f"part-{i:03d}{''.join(one.suffixes)}")
    rss = {prefix: peak_rss_kib([sluice.binary, "-q", command[0],
                                 f"s3://{BUCKET}/{top}/{prefix}/", *command[1:]], creds(s3))[0]
           for prefix in counts}
    low, high = min(counts, key=counts.get), max(counts, key=counts.get)
    return rss, (rss[high] - rss[low]) / (counts[high] - counts[low])


def test_compressed_objects_hold_little_until_their_turn(sluice, s3, tmp_path):
    """Each .csv.gz object of a prefix is sampled to open it (its inflated
    head, for the schema); what it keeps until its turn is its schema, not
    the sample or the download the sample started (3.7 MB an object of
    2.8 MB before), and one read to its end lets go of its last part. The
    values are pyarrow's."""
    import gzip
    import pyarrow as pa
    import pyarrow.csv as pacsv
    rows = 200_000
    text = "id,x,s\n" + "".join(f"{i},{i * 0.25},s{(i * 7919) % 100003}\n" for i in range(rows))
    one = tmp_path / "one.csv.gz"
    one.write_bytes(gzip.compress(text.encode(), 1))
    assert one.stat().st_size > 1 << 20, one.stat().st_size
    counts = {"few": 8, "many": 72}
    rss, per_object = _rss_per_object(sluice, s3, one, "gzmem", counts, "stats", "--threads", "2")
    if MEASURES_RSS:
        # ~70 KiB here (peaks vary by ~20 MB between runs); 3.5 MiB before
        assert per_object < 1024, (rss, per_object)
    # Opening samples each object's head by one ranged GET of a MiB (the
    # sample's download went on to fetch up to 4 MiB of each, again at its
    # turn); the scan fetches each object once more, whole.
    size, few = one.stat().st_size, counts["few"]
    counter = ConnectionCounter(int(s3["endpoint"].rsplit(":", 1)[1]))
    try:
        proc = run(sluice, creds(s3, AWS_ENDPOINT_URL=f"http://127.0.0.1:{counter.port}"),
                   "-q", "schema", f"s3://{BUCKET}/gzmem/few/")
        assert proc.returncode == 0, proc.stderr.decode()
        assert counter.received < few * 1.25 * 2**20, (counter.received, few)
    finally:
        counter.close()
    got, counter = read_counted(sluice, s3, f"s3://{BUCKET}/gzmem/few/", tmp_path / "r.arrows")
    same_table(got, pa.concat_tables([pacsv.read_csv(one)] * few))
    assert counter.received < few * (size + 1.25 * 2**20), (counter.received, few, size)


def test_compressed_object_read_again_with_wider_types(sluice, s3, tmp_path):
    """A remote .csv.gz whose later values do not fit the types its sample
    suggested is read again from its start with the wider types (it used to
    fail: a remote compressed stream could not start over), as a local
    file is: the table pyarrow reads when given those types."""
    import gzip
    import pyarrow as pa
    import pyarrow.csv as pacsv
    rows = 150_000
    lines = [f"{i},{i * 3}\n" for i in range(rows)]
    lines[rows - 7] = f"{rows - 7},2.5\n"
    text = "a,b\n" + "".join(lines)
    key = "late/late.csv.gz"
    path = s3["data"] / BUCKET / key
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress(text.encode(), 1))
    want = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
        column_types={"a": pa.int64(), "b": pa.float64()}))
    out = tmp_path / "late.arrow"
    proc = run(sluice, creds(s3), "convert", f"s3://{BUCKET}/{key}", out, "-q")
    assert proc.returncode == 0, proc.stderr.decode()
    with ipc.open_file(out) as f:
        got = f.read_all()
    assert got.schema == want.schema
    assert got.equals(want)


@pytest.mark.parametrize("page", [None, "1", "3"])
def test_list_special_keys(sluice, s3, listing, tmp_path, page):
    root = listing / "special"
    files = [(key, root / key) for key in SPECIAL_KEYS]
    got = read_location(sluice, creds(s3, SLUICE_S3_LIST_PAGE=page),
                        f"s3://{BUCKET}/ls/special/", tmp_path / "r.arrows")
    same_table(got, peer_concat(files, csv_reader))
    # A glob whose literal prefix has characters to encode, and an escaped '?'.
    got = read_location(sluice, creds(s3, SLUICE_S3_LIST_PAGE=page),
                        f"s3://{BUCKET}/ls/special/x=y\\?z#*", tmp_path / "r.arrows")
    same_table(got, peer_concat([f for f in files if f[0] == "x=y?z#w.csv"], csv_reader))


def test_list_nothing_there_is_an_error(sluice, s3, listing):
    for location, named in ((f"s3://{BUCKET}/ls/nothing/", "ls/nothing/"),
                            (f"s3://{BUCKET}/ls/pq/*.csv", "ls/pq/*.csv"),
                            (f"s3://{BUCKET}/ls/pq/*.crc", "ls/pq/*.crc")):  # hidden only
        proc = run(sluice, creds(s3), "convert", location, "-", "-t", "arrows", "-q")
        check_clean_failure(proc)
        assert named in proc.stderr.decode(), proc.stderr.decode()


def test_list_missing_bucket(sluice, s3):
    proc = run(sluice, creds(s3), "convert", "s3://nosuchbucket/x/", "-", "-t", "arrows", "-q")
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "NoSuchBucket" in err and "nosuchbucket" in err, err


def test_list_anonymous_and_wrong_secret_are_refused(sluice, s3, listing):
    proc = run(sluice, env_with(s3), "convert", f"s3://{BUCKET}/ls/pq/", "-", "-t", "arrows", "-q")
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "403" in err and "ls/pq/" in err and "no AWS credentials" in err, err
    env = env_with(s3, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY="wrong-secret")
    proc = run(sluice, env, "convert", f"s3://{BUCKET}/ls/pq/", "-", "-t", "arrows", "-q")
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert "403" in err and "SignatureDoesNotMatch" in err, err


# ---- A scripted ListObjectsV2 server ------------------------------------------------


class ScriptedHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _answer(self, body: bool):
        srv = self.server
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        srv.requests.append({"method": self.command, "path": url.path, "query": query,
                             "headers": dict(self.headers)})
        if "list-type" in query:
            status, text = srv.pages[min(len(srv.list_requests()), len(srv.pages)) - 1]
            data = text.encode()
        else:
            virtual = self.headers["Host"].startswith(BUCKET + ".")
            key = urllib.parse.unquote(url.path[1:] if virtual else url.path[len(BUCKET) + 2:])
            status, data = (200, srv.objects[key]) if key in srv.objects else (404, b"")
        size, rng = len(data), self.headers.get("Range")
        if srv.ranges and status == 200 and rng and "list-type" not in query:
            a, b = rng.split("=", 1)[1].split("-")
            start, end = int(a), min(int(b), size - 1) if b else size - 1
            status, data = 206, data[start:end + 1]
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_GET(self):
        self._answer(True)

    def do_HEAD(self):
        self._answer(False)

    def _write(self):
        """Multipart uploads: CreateMultipartUpload answers the scripted
        `upload_id`, parts get `part_status`, the rest 200."""
        srv = self.server
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        srv.requests.append({"method": self.command, "path": url.path, "query": query,
                             "headers": dict(self.headers)})
        status, body = 200, b""
        if self.command == "POST" and "uploads" in query:
            body = (f"<InitiateMultipartUploadResult><UploadId>{srv.upload_id}</UploadId>"
                    "</InitiateMultipartUploadResult>").encode()
        elif self.command == "PUT" and "partNumber" in query:
            status = srv.part_status
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if status == 200:
            self.send_header("ETag", '"e"')
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PUT = do_DELETE = _write


class ScriptedS3(ThreadingHTTPServer):
    """Answers ListObjectsV2 with the scripted (status, body) pages in turn
    (the last one repeats) and serves `objects` (key -> bytes) by GET / HEAD,
    honouring Range when `ranges` is set. Records every request. Signatures
    are not checked."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), ScriptedHandler)
        self.pages: list[tuple[int, str]] = []
        self.objects: dict[str, bytes] = {}
        self.requests: list[dict] = []
        self.ranges = False
        self.upload_id = "u1"
        self.part_status = 200

    def list_requests(self) -> list[dict]:
        return [r for r in self.requests if "list-type" in r["query"]]


def list_page(keys, token=None, truncated=None, sizes=None):
    """A ListBucketResult with the keys given as raw XML text (and their
    <Size>s: `sizes`, else 1)."""
    truncated = token is not None if truncated is None else truncated
    sizes = sizes or [1] * len(keys)
    contents = "".join(f"<Contents><Key>{k}</Key><Size>{n}</Size></Contents>"
                       for k, n in zip(keys, sizes))
    next_token = f"<NextContinuationToken>{token}</NextContinuationToken>" if token else ""
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            f"<Name>{BUCKET}</Name><Prefix>p/</Prefix><KeyCount>{len(keys)}</KeyCount>"
            f"<MaxKeys>2</MaxKeys><IsTruncated>{'true' if truncated else 'false'}</IsTruncated>"
            f"{contents}{next_token}</ListBucketResult>")


@pytest.fixture
def scripted():
    srv = ScriptedS3()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def scripted_env(srv, host="127.0.0.1", **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_ENDPOINT_URL": f"http://{host}:{srv.server_address[1]}",
                "AWS_REGION": "us-east-1", "HOME": "/nonexistent"})
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


@pytest.mark.parametrize("style", ["path", "virtual"])
def test_list_pages_entities_and_markers(sluice, scripted, tmp_path, style):
    """Three pages; keys spelled with entities and character references;
    directory markers and hidden keys left out; tokens sent back exactly."""
    tokens = ["tok+1/=&x", "\u00e9t\u00e9 2"]
    scripted.pages = [
        (200, list_page(["p/", "p/a&amp;b.csv", "p/&#x20;lead.csv"],
                        tokens[0].replace("&", "&amp;"))),
        (200, list_page(["p/_SUCCESS", "p/sub/", "p/sub/&#252;&lt;&#x1F600;&gt;.csv"], tokens[1])),
        (200, list_page(["p/sub/.x.csv", "p/z&quot;&apos;.csv"])),
    ]
    decoded = ["p/a&b.csv", "p/ lead.csv", "p/sub/\u00fc<\U0001F600>.csv", "p/z\"'.csv"]
    for i, key in enumerate(decoded):
        scripted.objects[key] = f"id,name\n{i},{key.replace(chr(34), '')}\n".encode()
    local = tmp_path / "local"
    local.mkdir()
    files = []
    for i, key in enumerate(decoded):
        path = local / f"{i}.csv"
        path.write_bytes(scripted.objects[key])
        files.append((key, path))
    host = "localhost" if style == "virtual" else "127.0.0.1"
    env = scripted_env(scripted, host, SLUICE_S3_LIST_PAGE="2", SLUICE_S3_ADDRESSING_STYLE=style)
    got = read_location(sluice, env, f"s3://{BUCKET}/p/", tmp_path / "r.arrows")
    same_table(got, peer_concat(files, csv_reader))
    lists = scripted.list_requests()
    assert len(lists) == 3
    for r, token in zip(lists, [None] + tokens):
        assert r["path"] == ("/" if style == "virtual" else f"/{BUCKET}")
        assert r["query"]["list-type"] == ["2"] and r["query"]["max-keys"] == ["2"]
        assert r["query"]["prefix"] == ["p/"]
        assert r["query"].get("continuation-token") == ([token] if token else None)
        assert "Authorization" not in r["headers"]  # anonymous: no credentials set
        if style == "virtual":
            assert r["headers"]["Host"].startswith(f"{BUCKET}.localhost:")
    fetched = {urllib.parse.unquote(r["path"]) for r in scripted.requests
               if "list-type" not in r["query"]}
    prefix = "/" if style == "virtual" else f"/{BUCKET}/"
    assert fetched == {prefix + k for k in decoded}


@pytest.mark.parametrize("pages,message", [
    ([(200, "<html>not S3</html>")], "malformed"),
    ([(200, list_page(["p/a.csv"], truncated=True))], "NextContinuationToken"),
    ([(200, list_page(["p/a.csv"], "t1")), (200, list_page(["p/b.csv"], "t1"))], "repeated"),
    ([(200, list_page(["p/a&nbsp;.csv"]))], "bad Key"),
    ([(200, list_page(["p/a&#0;.csv"]))], "bad Key"),
    ([(200, list_page(["p/a.csv"]).replace("<IsTruncated>false</IsTruncated>", ""))],
     "IsTruncated"),
    ([(403, "<Error><Code>AccessDenied</Code><Message>go &amp; away</Message></Error>")],
     "AccessDenied: go & away"),
    ([(404, "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist"
            "</Message></Error>")], "NoSuchBucket: The specified bucket does not exist"),
    ([(500, "<Error><Code>InternalError</Code></Error>")], "InternalError"),
])
def test_list_bad_answers_are_clear_errors(sluice, scripted, pages, message):
    scripted.pages = pages
    proc = run(sluice, scripted_env(scripted), "convert", f"s3://{BUCKET}/p/", "-", "-t",
               "arrows", "-q")
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert message in err and f"'{BUCKET}'" in err and "'p/'" in err, err
    if pages[0][0] == 500:
        assert len(scripted.list_requests()) == 6  # 6 attempts, as every request makes


def test_stale_listed_sizes_are_only_hints(sluice, scripted, tmp_path):
    """Listed sizes out of date (objects rewritten since the listing), on both
    sides of the 64 KiB edge and the 256 KiB whole-object limit: every object
    is read as it is now; values equal pyarrow's."""
    scripted.ranges = True
    cases = [(100_000, 200_000), (100_000, 10_000), (600_000, 150_000), (30_000, 150_000),
             (200_000, 100_000), (150_000, 150_001)]  # (actual bytes about, listed)
    keys, files = [], []
    for i, (actual, _) in enumerate(cases):
        rows = "".join(f"{i * 100_000 + j},{'v' * 20}{j}\n" for j in range(actual // 30))
        key = f"p/{i}.csv"
        scripted.objects[key] = ("id,name\n" + rows).encode()
        path = tmp_path / f"{i}.csv"
        path.write_bytes(scripted.objects[key])
        keys.append(key)
        files.append((key, path))
    scripted.pages = [(200, list_page(keys, sizes=[listed for _, listed in cases]))]
    got = read_location(sluice, scripted_env(scripted), f"s3://{BUCKET}/p/", tmp_path / "r.arrows")
    same_table(got, peer_concat(files, csv_reader))


def test_list_retries_a_server_error(sluice, scripted, tmp_path):
    scripted.pages = [(503, "<Error><Code>SlowDown</Code></Error>"),
                      (200, list_page(["p/a.csv"]))]
    scripted.objects["p/a.csv"] = b"id\n7\n"
    (tmp_path / "a.csv").write_bytes(b"id\n7\n")
    got = read_location(sluice, scripted_env(scripted), f"s3://{BUCKET}/p/*.csv",
                        tmp_path / "r.arrows")
    same_table(got, peer_concat([("p/a.csv", tmp_path / "a.csv")], csv_reader))
    assert len(scripted.list_requests()) == 2


@pytest.mark.parametrize("page", [None, "2"])
def test_hive_partitions_under_a_prefix(sluice, s3, tmp_path, page):
    """key=value prefixes under an S3 prefix are columns, as in a local
    directory (tests/py/test_hive.py checks those against DuckDB and polars)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    local = tmp_path / "hive"
    table = pa.table({"id": list(range(30)), "region": [["eu", "us", None][i % 3] for i in range(30)],
                      "day": [f"2024-03-0{1 + i % 2}" for i in range(30)]})
    pq.write_to_dataset(table, local, partition_cols=["region", "day"])
    remote = s3["data"] / BUCKET / "hive"
    if remote.exists():
        shutil.rmtree(remote)
    shutil.copytree(local, remote)
    got = read_location(sluice, creds(s3, SLUICE_S3_LIST_PAGE=page), f"s3://{BUCKET}/hive/",
                        tmp_path / "r.arrows")
    want = read_location(sluice, creds(s3), local, tmp_path / "l.arrows")
    assert got.column_names == ["id", "region", "day"]
    assert got.schema.field("day").type == pa.date32()
    same_table(got, want)
    assert sorted(got.column("id").to_pylist()) == list(range(30))
    glob = read_location(sluice, creds(s3), f"s3://{BUCKET}/hive/region=eu/*/*.parquet",
                         tmp_path / "g.arrows")
    assert glob.column_names == ["id", "day"]  # region is above the glob's root


def test_hive_root_of_a_glob_with_escaped_characters(sluice, s3, tmp_path):
    """A glob's escaped characters belong to its root, as they do to the
    prefix it lists: under s3://b/esc/t=\\[x\\]/*/*.parquet, `t` is above
    the root and `k` is the one partition column, as for the same local
    glob. Before, the root was cut at the escaped '[' and `t` became a
    column of value '[x]'."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    local = tmp_path / "esc"
    for k in (1, 2):
        (local / "t=[x]" / f"k={k}").mkdir(parents=True)
        pq.write_table(pa.table({"id": [k]}), local / "t=[x]" / f"k={k}" / "f.parquet")
    remote = s3["data"] / BUCKET / "hive_esc"
    if remote.exists():
        shutil.rmtree(remote)
    shutil.copytree(local, remote)
    got = read_location(sluice, creds(s3), f"s3://{BUCKET}/hive_esc/t=\\[x\\]/*/*.parquet",
                        tmp_path / "r.arrows")
    want = read_location(sluice, creds(s3), f"{local}/t=\\[x\\]/*/*.parquet", tmp_path / "l.arrows")
    assert got.column_names == want.column_names == ["id", "k"]
    same_table(got, want)


@pytest.fixture
def observed(s3, tmp_path):
    """The s3 fixture's objects, served by a second s3s-fs behind a
    ConnectionCounter (which sees each request's target and headers); it
    takes virtual-hosted requests sent through the counter
    (Host: data.localhost:PORT). Yields (counter, endpoint host:port)."""
    port = free_port()
    counter = ConnectionCounter(port)
    host = f"localhost:{counter.port}"
    log_path = tmp_path / "observed.log"
    with open(log_path, "wb") as log:
        proc = start_s3s_fs(s3["binary"], s3["data"], port, log, log_path, virtual_hosts=[host])
        yield counter, host
        stop(proc)
        counter.close()


@pytest.mark.parametrize("how", ["config", "option", "default"])
def test_addressing_style_from_config_or_option(sluice, s3, observed, tmp_path, how):
    """The profile's nested `s3 = / addressing_style = virtual` block (as the
    AWS CLI writes it) and --s3-addressing make requests virtual-hosted
    (Host: bucket.localhost); a custom endpoint is path-style otherwise.
    s3s-fs checks the signature over that Host."""
    counter, host = observed
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "config").write_text(
        "[default]\nregion = us-east-1\ns3 =\n  addressing_style = virtual\n"
        if how == "config" else "[default]\nregion = us-east-1\n")
    env = creds(s3, AWS_ENDPOINT_URL=f"http://{host}", HOME=str(home))
    extra = ["--s3-addressing", "virtual"] if how == "option" else []
    got = read_location(sluice, env, f"s3://{BUCKET}/t.csv", tmp_path / "r.arrows", *extra)
    local = local_table(sluice, s3["local"] / "t.csv", tmp_path / "l.arrows", [])
    assert got.equals(local)
    assert counter.requests
    for r in counter.requests:
        if how == "default":
            assert r["target"] == f"/{BUCKET}/t.csv" and r["headers"]["host"] == host, r
        else:
            assert r["target"] == "/t.csv" and r["headers"]["host"] == f"{BUCKET}.{host}", r


def test_region_option_signs_for_that_region(sluice, s3, observed, tmp_path):
    """--region beats AWS_REGION in the credential scope (s3s-fs verifies
    the signature for whichever region the scope names)."""
    counter, host = observed
    env = creds(s3, AWS_ENDPOINT_URL=f"http://{host}", AWS_REGION="eu-west-3")
    got = read_location(sluice, env, f"s3://{BUCKET}/t.csv", tmp_path / "r.arrows",
                        "--region", "ap-south-1")
    assert got.equals(local_table(sluice, s3["local"] / "t.csv", tmp_path / "l.arrows", []))
    auths = [r["headers"].get("authorization", "") for r in counter.requests]
    assert auths and all("/ap-south-1/s3/aws4_request" in a for a in auths), auths


def test_dot_segments_of_a_key_are_sent_as_they_are(sluice, s3, observed, tmp_path):
    """S3 keys are names: "dir/../t.csv" and "./t.csv" are keys of their own,
    which boto3 sends as they are (and signs so). sluice's reads, unsigned
    reads, listings and writes send the same request targets as boto3 (s3s-fs
    checks the signatures; its file system then resolves the dots)."""
    boto3 = pytest.importorskip("boto3")
    counter, host = observed
    endpoint = f"http://{host}"
    peer = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)
    keys = ["dir/../t.csv", "./t.csv", "dir/./../t.csv"]
    for key in keys:
        peer.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    peer_targets = [r["target"] for r in counter.requests]
    assert peer_targets == [f"/{BUCKET}/{k}" for k in keys], peer_targets
    counter.requests.clear()
    env = creds(s3, AWS_ENDPOINT_URL=endpoint)
    local = local_table(sluice, s3["local"] / "t.csv", tmp_path / "l.arrows", [])
    for key in keys:
        got = read_location(sluice, env, f"s3://{BUCKET}/{key}", tmp_path / "r.arrows")
        assert got.equals(local), key
        targets = {r["target"] for r in counter.requests}
        assert targets == {f"/{BUCKET}/{key}"}, (key, targets)
        counter.requests.clear()
        # Unsigned (s3s-fs refuses it), the target is the same key.
        proc = run(sluice, env, "schema", f"s3://{BUCKET}/{key}", "--no-sign-request")
        check_clean_failure(proc)
        assert {r["target"] for r in counter.requests} == {f"/{BUCKET}/{key}"}
        counter.requests.clear()
    proc = run(sluice, env, "convert", s3["local"] / "t.csv", f"s3://{BUCKET}/out/../dots.csv",
               "-q")
    assert proc.returncode == 0, proc.stderr.decode()
    assert [r["target"] for r in counter.requests if r["method"] == "PUT"] == \
        [f"/{BUCKET}/out/../dots.csv"]
    assert (s3["data"] / BUCKET / "dots.csv").is_file()


def test_single_output_to_a_key_ending_in_slash_is_refused(sluice, s3, observed, tmp_path):
    """An s3:// output for one object named with a trailing '/' is refused
    before anything is read or sent, as a local path ending in '/' is ("not a
    file name"): S3 would store the table under a key that every listing
    skips as a directory marker."""
    counter, host = observed
    env = creds(s3, AWS_ENDPOINT_URL=f"http://{host}")
    local = run(sluice, env, "convert", s3["local"] / "t.csv", f"{tmp_path}/newdir/", "-t",
                "parquet", "-q")
    check_clean_failure(local)
    assert "not a file name" in local.stderr.decode(), local.stderr.decode()
    proc = run(sluice, env, "convert", s3["local"] / "t.csv", f"s3://{BUCKET}/newdir/", "-t",
               "parquet", "-q")
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert f"s3://{BUCKET}/newdir/: not a file name" in err, err
    assert counter.requests == []
    assert not (s3["data"] / BUCKET / "newdir").exists()


def test_longest_keys_are_sent_and_errors_keep_their_reason(sluice, s3, observed, tmp_path):
    """A key of S3's largest size, 1024 bytes, all of them percent-encoded
    (512 two-byte characters), goes out as boto3 sends it (it was refused as
    "too long"); the server's answer (s3s-fs cannot store a name that long)
    and a missing object under a key of 1000 characters are errors whose
    message keeps its end, the reason, after the long object name."""
    boto3 = pytest.importorskip("boto3")
    import botocore.exceptions
    counter, host = observed
    endpoint = f"http://{host}"
    peer = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)
    env = creds(s3, AWS_ENDPOINT_URL=endpoint)
    longest = "\u00e9" * 512
    assert len(longest.encode()) == 1024
    absent = "/".join(["k" * 199] * 5)  # 999 characters, each segment a valid file name
    for key in (longest, absent):
        with pytest.raises(botocore.exceptions.ClientError) as info:
            peer.get_object(Bucket=BUCKET, Key=key)
        code = info.value.response["Error"]["Code"]
        peer_targets = [r["target"] for r in counter.requests]
        counter.requests.clear()
        proc = run(sluice, env, "schema", f"s3://{BUCKET}/{key}")
        check_clean_failure(proc)
        err = proc.stderr.decode(errors="replace").strip()
        # (a missing key is then looked for as a prefix, key + "/": one listing)
        targets = {r["target"] for r in counter.requests if "list-type=2" not in r["target"]}
        assert targets == set(peer_targets), err[-300:]
        counter.requests.clear()
        status = info.value.response["ResponseMetadata"]["HTTPStatusCode"]
        assert err.endswith(code) and f"HTTP {status}" in err[-100:], (code, status, err[-300:])
        assert f"s3://{BUCKET}/" in err[:300], err[:300]


# ---- A server that stops mid-read; a write killed mid-upload ----------------


def test_server_restarted_mid_read(sluice, s3, tmp_path):
    """s3s-fs is stopped while a large object is being read (the reader is
    held back by its consumer, so most of the object is still to fetch) and
    started again on the same port: the read resumes from the last byte and
    gives the object's exact contents; with the server down for good, it
    fails with a clear error, not short or wrong data."""
    data = tmp_path / "data"
    (data / BUCKET).mkdir(parents=True)
    from test_http import write_lenprefix
    src = data / BUCKET / "big.lenprefix"
    write_lenprefix(src, 1_500_000, 5)  # ~36 MB
    local = read_local(sluice, src, tmp_path / "l.arrows", ["-O", "length_prefix=u8"])
    port = free_port()
    log_path = tmp_path / "server.log"
    env = dict(s3["base_env"], AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_REGION="us-east-1",
               AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
               SLUICE_HTTP_PART_SIZE=str(1 << 20))
    args = [sluice.binary, "cat", f"s3://{BUCKET}/big.lenprefix", "-t", "arrows", "-q",
            "-O", "length_prefix=u8", "--budget", "4M"]
    for restart in (True, False):
        with open(log_path, "ab") as log:
            server = start_s3s_fs(s3["binary"], data, port, log, log_path)
            # Unbuffered: communicate() reads the pipe's descriptor, not a buffer.
            reader = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                      bufsize=0)
            first = b""
            while len(first) < 1 << 20:  # started; the rest waits on this pipe
                chunk = reader.stdout.read((1 << 20) - len(first))
                assert chunk, reader.stderr.read().decode()
                first += chunk
            stop(server)
            if restart:
                time.sleep(0.5)
                server = start_s3s_fs(s3["binary"], data, port, log, log_path)
            rest, err = reader.communicate(timeout=300)
            if restart:
                stop(server)
                assert reader.returncode == 0, err.decode()
                got = ipc.open_stream(first + rest).read_all()
                assert got.equals(local)
            else:
                assert reader.returncode != 0
                message = err.decode()
                assert "s3://data/big.lenprefix" in message and "Traceback" not in message, message


def test_write_killed_mid_upload_leaves_no_partial_object(sluice, s3, tmp_path):
    """A multipart upload cut short by killing the writer at some point
    leaves either no object or the whole one, never a part of it (S3 shows
    an object only once CompleteMultipartUpload succeeds)."""
    from test_http import write_lenprefix
    src = tmp_path / "big.lenprefix"
    write_lenprefix(src, 1_200_000, 9)
    local_out = tmp_path / "whole.arrows"
    subprocess.run([sluice.binary, "convert", str(src), str(local_out), "-q", "-O",
                    "length_prefix=u8"], check=True)
    whole = local_out.read_bytes()
    assert len(whole) > 4 * (5 << 20)
    outcomes = set()
    for i, delay in enumerate((0.05, 0.3, 0.6, 1.0, 1.5, 3.0)):
        key = f"out/killed{i}.arrows"
        proc = subprocess.Popen([sluice.binary, "convert", str(src), f"s3://{BUCKET}/{key}", "-q",
                                 "-O", "length_prefix=u8", "--part-size", "5M"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=creds(s3))
        time.sleep(delay)
        proc.kill()
        proc.wait()
        stored = s3["data"] / BUCKET / key
        if stored.exists():
            assert stored.read_bytes() == whole, (delay, stored.stat().st_size)
            outcomes.add("whole")
        else:
            outcomes.add("none")
    assert "none" in outcomes  # the kills did land before the end


def test_failed_multipart_upload_aborts_that_upload_only(sluice, scripted, tmp_path):
    """A part refused: the upload is aborted with its UploadId (here one of
    400 '+', encoded to 1,200 bytes), and nothing else is sent: an abort
    without the id would be a DeleteObject of the key, which an earlier
    version sent when the id did not fit its buffer, deleting the object the
    write was to replace."""
    src = tmp_path / "big.lenprefix"
    from test_http import write_lenprefix
    write_lenprefix(src, 700_000, 11)  # ~17 MB of Arrow output: several parts
    scripted.upload_id = "+" * 400
    scripted.part_status = 403
    env = scripted_env(scripted, AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s",
                       SLUICE_S3_PART_SIZE=str(5 << 20))
    proc = run(sluice, env, "convert", src, f"s3://{BUCKET}/out/big.arrows", "-q", "-O",
               "length_prefix=u8")
    check_clean_failure(proc)
    assert "403" in proc.stderr.decode()
    writes = [r for r in scripted.requests if r["method"] != "GET"]
    assert writes[0]["method"] == "POST" and "uploads" in writes[0]["query"]
    assert all(r["query"].get("uploadId") == ["+" * 400] for r in writes[1:])
    assert writes[-1]["method"] == "DELETE"


def _is_complete(request):
    return request["method"] == "POST" and "uploadId=" in request["target"]


def test_lost_complete_answer_is_checked_against_the_object(sluice, s3, tmp_path):
    """The answer to CompleteMultipartUpload lost after the server completed
    the upload: the Complete sent again (libcurl resends it itself when the
    connection closes unanswered) is refused, the upload being gone (S3's
    NoSuchUpload, s3s-fs's AccessDenied). The object at the key, this
    upload's by its multipart ETag (MD5 of the parts' MD5s, "-N") and size,
    makes the write a success; it failed blaming the credentials. When the
    key holds another object by then, the write fails, without that hint."""
    from test_http import write_lenprefix
    src = tmp_path / "big.lenprefix"
    write_lenprefix(src, 700_000, 11)  # ~17 MB of Arrow output: 4 parts of 5 MiB
    local_out = tmp_path / "big.arrows"
    subprocess.run([sluice.binary, "convert", str(src), str(local_out), "-q", "-O",
                    "length_prefix=u8"], check=True)
    stored = s3["data"] / BUCKET / "out" / "lost.arrows"
    for replaced in (False, True):
        fwd = ConnectionCounter(int(s3["endpoint"].rsplit(":", 1)[1]))
        fwd.lose_answer = _is_complete
        if replaced:  # another writer's object, put there after this upload's
            fwd.after_loss = lambda: stored.write_bytes(b"another writer's object\n")
        try:
            env = creds(s3, AWS_ENDPOINT_URL=f"http://127.0.0.1:{fwd.port}")
            proc = run(sluice, env, "convert", src, f"s3://{BUCKET}/out/lost.arrows", "-q", "-O",
                       "length_prefix=u8", "--part-size", "5M")
            assert fwd.answers_lost == 1
            assert len([r for r in fwd.requests if _is_complete(r)]) == 2  # retried once
        finally:
            fwd.close()
        err = proc.stderr.decode()
        if not replaced:
            assert proc.returncode == 0, err
            assert stored.read_bytes() == local_out.read_bytes()
        else:
            check_clean_failure(proc)
            assert "CompleteMultipartUpload" in err and "credentials" not in err, err
            assert "not this upload's" in err, err
            assert stored.read_bytes() == b"another writer's object\n"


def test_interrupt_during_multipart_upload_aborts_it(sluice, s3, tmp_path):
    """Ctrl-C while the parts go up (all four in flight, on a slow link):
    the upload is aborted, never completed, the object the write was to
    replace stays, and sluice dies of the signal (the cancel is asked until
    CompleteMultipartUpload is sent; the Python package's case, where only
    the caller's thread can answer it, is in tests/pkg)."""
    import signal
    from test_http import write_lenprefix
    src = tmp_path / "big.lenprefix"
    write_lenprefix(src, 700_000, 11)  # ~17 MB of Arrow output: 4 parts of 5 MiB
    stored = s3["data"] / BUCKET / "out" / "interrupted.arrows"
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_bytes(b"the old object\n")
    fwd = ConnectionCounter(int(s3["endpoint"].rsplit(":", 1)[1]), up_bytes_per_s=4 << 20)
    try:
        env = creds(s3, AWS_ENDPOINT_URL=f"http://127.0.0.1:{fwd.port}")
        proc = subprocess.Popen([sluice.binary, "convert", str(src),
                                 f"s3://{BUCKET}/out/interrupted.arrows", "-q", "-O",
                                 "length_prefix=u8", "--part-size", "5M"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 60
        while not any("partNumber=" in r["target"] for r in fwd.requests):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=120)[1].decode()
        assert proc.returncode == -signal.SIGINT, (proc.returncode, err)
        requests = fwd.requests
    finally:
        fwd.close()
    assert not any(_is_complete(r) for r in requests), [r["target"] for r in requests]
    assert any(r["method"] == "DELETE" and "uploadId=" in r["target"] for r in requests)
    assert stored.read_bytes() == b"the old object\n"


def _files(root):
    """The files under `root`, relative to it, sorted."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _ids(sluice, s3, location, out):
    """The sorted id column of what sluice reads at `location`."""
    got = read_location(sluice, creds(s3), location, out)
    return sorted(got.column("id").to_pylist())


def test_partitioned_write_to_a_prefix(sluice, s3, tmp_path):
    """convert --partition-by to s3://bucket/prefix/ puts the same objects
    under the prefix as the same write puts files in a local directory
    (escaped keys included: the %XX of a value is itself escaped in the
    request), which read back equal; a prefix holding objects is refused;
    a failing write leaves no object."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": list(range(40)),
                             "region": [["eu", "us/west", None, "a b"][i % 4] for i in range(40)],
                             "day": [i % 3 for i in range(40)]}), src)
    local = tmp_path / "local"
    proc = run(sluice, creds(s3), "convert", src, local, "-t", "parquet",
               "--partition-by", "region,day", "-q")
    assert proc.returncode == 0, proc.stderr.decode()
    proc = run(sluice, creds(s3), "convert", src, f"s3://{BUCKET}/parts/", "-t", "parquet",
               "--partition-by", "region,day", "-q")
    assert proc.returncode == 0, proc.stderr.decode()
    stored = s3["data"] / BUCKET / "parts"
    assert _files(stored) == _files(local)
    assert len(_files(local)) == 12 and "region=us%2Fwest/day=1/part-0.parquet" in _files(local)
    for name in _files(local):
        assert (stored / name).read_bytes() == (local / name).read_bytes()
    got = read_location(sluice, creds(s3), f"s3://{BUCKET}/parts/", tmp_path / "r.arrows")
    want = read_location(sluice, creds(s3), local, tmp_path / "l.arrows")
    same_table(got, want)
    assert sorted(got.column("id").to_pylist()) == list(range(40))
    # --max-rows-per-file: the same part-N objects as the local files.
    for dst in (tmp_path / "local2", f"s3://{BUCKET}/parts2/"):
        proc = run(sluice, creds(s3), "convert", src, dst, "-t", "parquet",
                   "--partition-by", "region", "--max-rows-per-file", "4", "-q")
        assert proc.returncode == 0, proc.stderr.decode()
    stored2 = s3["data"] / BUCKET / "parts2"
    assert _files(stored2) == _files(tmp_path / "local2")
    assert "region=eu/part-2.parquet" in _files(stored2)  # 10 rows: 4 + 4 + 2
    for name in _files(stored2):
        assert (stored2 / name).read_bytes() == (tmp_path / "local2" / name).read_bytes()
    # Objects under the prefix already: refused, nothing changed.
    before = _files(stored)
    proc = run(sluice, creds(s3), "convert", src, f"s3://{BUCKET}/parts", "-t", "parquet",
               "--partition-by", "region", "-q")
    assert proc.returncode != 0 and "objects exist under this prefix" in proc.stderr.decode()
    assert _files(stored) == before
    # A write that fails part way (a float key is refused before any upload;
    # a truncated input fails after the first partitions were written out).
    proc = run(sluice, creds(s3), "convert", src, f"s3://{BUCKET}/never/", "-t", "parquet",
               "--partition-by", "nope", "-q")
    assert proc.returncode != 0 and "no column 'nope'" in proc.stderr.decode()
    bad = tmp_path / "cut.csv"
    bad.write_text("k,x\n" + "".join(f"k{i % 5},{i}\n" for i in range(5000)) + "k1,\"unterminated\n")
    proc = run(sluice, creds(s3), "convert", bad, f"s3://{BUCKET}/never/", "-t", "parquet",
               "--partition-by", "k", "-q")
    assert proc.returncode != 0, proc.stdout
    assert not (s3["data"] / BUCKET / "never").exists()


def test_partitioned_write_to_a_prefix_with_glob_characters(sluice, s3, tmp_path):
    """An output prefix is a name: `r[3]*?/` is checked for objects under
    it, not taken for a glob (which listed what the pattern matched: data
    there was replaced without a word, append overwrote part-0, and an
    empty `y[7]/` was refused for a sibling `y7/`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "k": ["a", "b", "a"]}), src)

    def write(dst, *more):
        return run(sluice, creds(s3), "convert", src, dst, "-t", "parquet",
                   "--partition-by", "k", "-q", *more)

    prefix = f"s3://{BUCKET}/globby/r[3]*?"
    assert write(prefix).returncode == 0
    again = write(prefix)
    assert again.returncode != 0 and "objects exist under this prefix" in again.stderr.decode()
    assert write(prefix, "--existing-data", "append").returncode == 0
    stored = s3["data"] / BUCKET / "globby" / "r[3]*?"
    assert _files(stored) == ["k=a/part-0.parquet", "k=a/part-1.parquet",
                              "k=b/part-0.parquet", "k=b/part-1.parquet"]
    assert write(f"s3://{BUCKET}/globby/y7").returncode == 0
    proc = write(f"s3://{BUCKET}/globby/y[7]")
    assert proc.returncode == 0, proc.stderr.decode()
    assert _files(s3["data"] / BUCKET / "globby" / "y[7]") == ["k=a/part-0.parquet",
                                                               "k=b/part-0.parquet"]


def test_partitioned_write_over_existing_objects(sluice, s3, tmp_path):
    """--existing-data on an S3 prefix does what it does to a local
    directory: overwrite_or_ignore replaces objects of the same names, append
    adds objects named past each partition's part-N, delete_matching
    replaces the objects of the partitions written (new ones named past the
    old, which are deleted after the uploads, the DELETEs signed as every
    request) and keeps the others; each reads back as the local directory."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": list(range(30)),
                             "region": [["eu", "us/west", "a b"][i % 3] for i in range(30)]}),
                   src)
    eu = tmp_path / "eu.parquet"
    pq.write_table(pa.table({"id": [100, 101], "region": ["eu", "eu"]}), eu)
    local, prefix = tmp_path / "local", f"s3://{BUCKET}/existing"
    stored = s3["data"] / BUCKET / "existing"

    def write(source, dst, *more):
        proc = run(sluice, creds(s3), "convert", source, dst, "-t", "parquet",
                   "--partition-by", "region", "-q", *more)
        assert proc.returncode == 0, proc.stderr.decode()

    for dst in (local, prefix):
        write(src, dst)
        write(src, dst, "--existing-data", "overwrite_or_ignore")
    assert _files(stored) == _files(local) and len(_files(local)) == 3
    for dst in (local, prefix):
        write(src, dst, "--existing-data", "append")
    assert _files(stored) == _files(local)
    assert "region=us%2Fwest/part-1.parquet" in _files(local) and len(_files(local)) == 6
    assert _ids(sluice, s3, prefix + "/", tmp_path / "r.arrows") == sorted(list(range(30)) * 2)
    kept = {name: (stored / name).read_bytes() for name in _files(stored) if "eu" not in name}
    for dst in (local, prefix):
        write(eu, dst, "--existing-data", "delete_matching")
    assert [n for n in _files(local) if "eu" in n] == ["region=eu/part-0.parquet"]
    assert [n for n in _files(stored) if "eu" in n] == ["region=eu/part-2.parquet"]
    assert [n for n in _files(stored) if "eu" not in n] == sorted(kept)
    assert all((stored / name).read_bytes() == data for name, data in kept.items())
    want = sorted([i for i in range(30) if i % 3 != 0] * 2 + [100, 101])
    assert _ids(sluice, s3, prefix + "/", tmp_path / "r2.arrows") == want
    assert _ids(sluice, s3, local, tmp_path / "l2.arrows") == want
    proc = run(sluice, creds(s3), "convert", src, prefix, "--partition-by", "region",
               "-t", "parquet", "--existing-data", "sideways")
    assert proc.returncode == 2 and "bad --existing-data" in proc.stderr.decode()
    proc = run(sluice, creds(s3), "convert", src, tmp_path / "one.parquet",
               "--existing-data", "append")
    assert proc.returncode != 0 and "dataset output" in proc.stderr.decode()


def test_dataset_without_partitions_under_a_prefix(sluice, s3, tmp_path):
    """--max-rows-per-file without --partition-by to s3://bucket/prefix/:
    objects prefix/part-0.parquet, ... (one '/', as the local files are
    named), each equal to the local write's file; append adds objects
    named past them; delete_matching leaves only the new objects, deleting
    every old one under the prefix, deeper ones too."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": list(range(30)), "x": [i * 0.5 for i in range(30)]}), src)
    local, prefix = tmp_path / "local", f"s3://{BUCKET}/unparted/"
    stored = s3["data"] / BUCKET / "unparted"

    def write(dst, *more):
        proc = run(sluice, creds(s3), "convert", src, dst, "-t", "parquet",
                   "--max-rows-per-file", "12", "-q", *more)
        assert proc.returncode == 0, proc.stderr.decode()

    for dst in (local, prefix):
        write(dst)
    assert _files(stored) == _files(local) == [f"part-{i}.parquet" for i in range(3)]
    for name in _files(local):
        assert (stored / name).read_bytes() == (local / name).read_bytes()
    assert _ids(sluice, s3, prefix, tmp_path / "a.arrows") == list(range(30))
    write(prefix, "--existing-data", "append")
    assert _files(stored) == [f"part-{i}.parquet" for i in range(6)]
    assert _ids(sluice, s3, prefix, tmp_path / "b.arrows") == sorted(list(range(30)) * 2)
    pq.write_table(pa.table({"id": [7]}), tmp_path / "deep.parquet")
    proc = run(sluice, creds(s3), "convert", tmp_path / "deep.parquet",
               f"s3://{BUCKET}/unparted/k=1/deep.parquet", "-q")
    assert proc.returncode == 0, proc.stderr.decode()
    write(prefix, "--existing-data", "delete_matching")
    assert _files(stored) == [f"part-{i}.parquet" for i in range(6, 9)]
    assert _ids(sluice, s3, prefix, tmp_path / "c.arrows") == list(range(30))


def test_partitioned_write_of_more_objects_than_the_soft_file_limit(sluice, s3, tmp_path):
    """Each object waits in a staged file until the uploads: 300 partitions
    under a soft limit of 128 open files (the hard one left as it is) still
    upload, since the CLI raises its soft limit to the hard one."""
    import resource
    import pyarrow as pa
    import pyarrow.parquet as pq
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": list(range(600)), "b": [i % 300 for i in range(600)]}), src)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip(f"hard limit on open files is {hard}")

    def low_soft_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, hard))

    proc = subprocess.run([sluice.binary, "convert", str(src), f"s3://{BUCKET}/many/", "-t",
                           "parquet", "--partition-by", "b", "-q"], capture_output=True,
                          timeout=300, env=creds(s3), preexec_fn=low_soft_limit)
    assert proc.returncode == 0, proc.stderr.decode()
    stored = s3["data"] / BUCKET / "many"
    assert len([p for p in stored.rglob("*.parquet")]) == 300
    got = read_location(sluice, creds(s3), f"s3://{BUCKET}/many/", tmp_path / "r.arrows")
    assert sorted(got.column("id").to_pylist()) == list(range(600))


REGION_XML = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AuthorizationHeaderMalformed'
              "</Code><Message>The authorization header is malformed; the region 'us-east-1' is "
              "wrong; expecting 'eu-west-1'</Message><Region>eu-west-1</Region><RequestId>R1"
              "</RequestId><HostId>" + "H" * 300 + "</HostId></Error>")
REDIRECT_XML = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PermanentRedirect</Code>'
                "<Message>The bucket you are attempting to access must be addressed using the "
                "specified endpoint. Please send all future requests to this endpoint.</Message>"
                "<Endpoint>data.s3.eu-west-1.amazonaws.com</Endpoint><Bucket>data</Bucket>"
                "<RequestId>R2</RequestId><HostId>" + "H" * 300 + "</HostId></Error>")


class FaultHandler(BaseHTTPRequestHandler):
    """Answers each request with the first of the server's rules
    (predicate(method, query) -> (status, body)) that applies, else 200 (an
    UploadId for CreateMultipartUpload, an ETag for parts)."""

    def log_message(self, *args):
        pass

    def _any(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        if self.command in ("PUT", "POST"):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append((self.command, query))
        status, body = 200, ""
        if self.command == "POST" and "uploads" in query:
            body = "<InitiateMultipartUploadResult><UploadId>u</UploadId></InitiateMultipartUploadResult>"
        for applies, answer in self.server.rules:
            if applies(self.command, query):
                status, body = answer
                break
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", '"e"')
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _any


@pytest.fixture
def faulty():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), FaultHandler)
    srv.daemon_threads = True
    srv.rules, srv.requests = [], []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _no_raw_xml(err):
    assert "<?xml" not in err and "<Error>" not in err and "HostId" not in err, err


def test_write_errors_name_the_operation_and_what_s3_said(sluice, faulty, tmp_path):
    """Write errors show S3's Code: Message (as reads and listings do), name
    the operation (PutObject, CreateMultipartUpload, UploadPart N,
    CompleteMultipartUpload) and the object, and the region a wrong-region
    answer names; they showed the raw XML cut at 300 bytes after "PUT:" or
    "POST:"."""
    src = tmp_path / "big.lenprefix"
    from test_http import write_lenprefix
    write_lenprefix(src, 700_000, 11)  # ~17 MB of Arrow output: 4 parts of 5 MiB
    small = tmp_path / "t.csv"
    small.write_text("a\n1\n")
    env = scripted_env(faulty, AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s",
                       SLUICE_S3_PART_SIZE=str(5 << 20))
    big = ("convert", src, f"s3://{BUCKET}/out/big.arrows", "-q", "-O", "length_prefix=u8")
    cases = [
        (lambda m, q: m == "PUT", (400, REGION_XML), ("convert", small, f"s3://{BUCKET}/o.csv"),
         "PutObject: HTTP 400: AuthorizationHeaderMalformed: The authorization header is "
         "malformed; the region 'us-east-1' is wrong; expecting 'eu-west-1' (region eu-west-1: "
         "set the bucket's region"),
        (lambda m, q: m == "POST" and "uploads" in q, (400, REGION_XML), big,
         "CreateMultipartUpload: HTTP 400: AuthorizationHeaderMalformed"),
        (lambda m, q: m == "PUT" and q.get("partNumber") == ["2"],
         (400, "<Error><Code>InvalidArgument</Code><Message>Part &lt;2&gt; bad</Message></Error>"),
         big, "UploadPart 2: HTTP 400: InvalidArgument: Part <2> bad"),
        (lambda m, q: m == "POST" and "uploadId" in q,
         (200, "<Error><Code>InternalError</Code><Message>We encountered an internal error."
               "</Message></Error>"), big,
         "CompleteMultipartUpload: InternalError: We encountered an internal error."),
        (lambda m, q: m == "PUT", (301, REDIRECT_XML), ("convert", small, f"s3://{BUCKET}/o.csv"),
         "PutObject: HTTP 301: PermanentRedirect: The bucket you are attempting to access must "
         "be addressed using the specified endpoint. Please send all future requests to this "
         "endpoint. (endpoint data.s3.eu-west-1.amazonaws.com, region eu-west-1: set the "
         "bucket's region"),
    ]
    for applies, answer, args, expected in cases:
        faulty.rules[:] = [(applies, answer)]
        proc = run(sluice, env, *args)
        check_clean_failure(proc)
        err = proc.stderr.decode()
        assert expected in err, err
        assert f"s3://{BUCKET}/o" in err and err.count(f"s3://{BUCKET}/") == 1, err
        _no_raw_xml(err)


def test_write_requests_make_six_attempts_as_reads_do(sluice, faulty, tmp_path):
    """A PutObject answered 503 SlowDown every time is sent 6 times, the
    attempts docs/remote.md gives every request (reads made 6, listings and
    writes 5)."""
    small = tmp_path / "t.csv"
    small.write_text("a\n1\n")
    faulty.rules[:] = [(lambda m, q: m == "PUT",
                        (503, "<Error><Code>SlowDown</Code><Message>Reduce your request rate."
                              "</Message></Error>"))]
    env = scripted_env(faulty, AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s")
    proc = run(sluice, env, "convert", small, f"s3://{BUCKET}/o.csv")
    check_clean_failure(proc)
    assert "PutObject: HTTP 503: SlowDown" in proc.stderr.decode(), proc.stderr.decode()
    assert [m for m, _ in faulty.requests] == ["PUT"] * 6


def test_read_and_list_errors_show_a_wrong_regions_endpoint(sluice, faulty):
    """A 301 PermanentRedirect (a bucket in another region) shows the
    <Endpoint> it names and the region in it, with a hint to set the region,
    for a GET and a listing; it showed the Message only."""
    env = scripted_env(faulty, AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s")
    faulty.rules[:] = [(lambda m, q: True, (301, REDIRECT_XML))]
    for location in (f"s3://{BUCKET}/t.csv", f"s3://{BUCKET}/dir/"):
        proc = run(sluice, env, "schema", location)
        check_clean_failure(proc)
        err = proc.stderr.decode()
        assert "PermanentRedirect" in err and "(endpoint data.s3.eu-west-1.amazonaws.com, " \
            "region eu-west-1: set the bucket's region (--region, AWS_REGION" in err, err
        _no_raw_xml(err)


def test_write_error_on_a_long_location_names_it_once(sluice, faulty, tmp_path):
    """A write error on a ~1 KB location names it once, cut in its middle
    with a marker as a read's error is; the shortened message did not start
    with the whole location, so it was led by the location again, itself
    cut without a marker."""
    small = tmp_path / "t.csv"
    small.write_text("a\n1\n")
    env = scripted_env(faulty, AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s")
    faulty.rules[:] = [(lambda m, q: True, (
        403, "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"))]
    location = f"s3://{BUCKET}/" + "/".join(["d" * 120] * 8) + "/x.csv"
    for args in (("convert", small, location), ("cat", location)):
        proc = run(sluice, env, *args)
        check_clean_failure(proc)
        err = proc.stderr.decode()
        assert err.count(f"s3://{BUCKET}/") == 1 and err.count(" [...] ") == 1, err
        assert "/x.csv: " in err and "AccessDenied: Access Denied" in err, err


def test_keys_with_glob_characters_are_read_by_name(sluice, s3, tmp_path):
    """A key with glob characters is read by its name, as pyarrow reads it
    (pyarrow does not glob): spelled as it is (the listing has it, so it is
    that object, as a local path that exists is that file) or with its glob
    characters escaped (one object, no listing). run[1].csv was a glob that
    matched run1.csv or nothing; run\\[1\\].csv sent the backslashes."""
    pafs = pytest.importorskip("pyarrow.fs")
    import pyarrow.csv as pacsv
    root = s3["data"] / BUCKET / "esc"
    root.mkdir()
    contents = {"run[1].csv": "v\n1\n", "run1.csv": "v\n2\n", "a*b.csv": "v\n3\n",
                "aXb.csv": "v\n4\n", "q?.csv": "v\n5\n", "x[2].csv": "v\n6\n"}
    for name, text in contents.items():
        (root / name).write_text(text)
    fs = pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region="us-east-1",
                           endpoint_override=s3["endpoint"], scheme="http")

    def values(location):
        proc = run(sluice, creds(s3), "convert", location, tmp_path / "o.arrows", "-t", "arrows",
                   "-q")
        assert proc.returncode == 0, f"{location}: {proc.stderr.decode()}"
        return ipc.open_stream((tmp_path / "o.arrows").read_bytes()).read_all()["v"].to_pylist()

    for key, spellings in (("run[1].csv", ["run[1].csv", "run\\[1\\].csv", "run\\[1].csv"]),
                           ("a*b.csv", ["a*b.csv", "a\\*b.csv"]), ("q?.csv", ["q\\?.csv"]),
                           ("x[2].csv", ["x[2].csv", "x\\[2\\].csv"])):
        with fs.open_input_stream(f"{BUCKET}/esc/{key}") as f:
            peer = pacsv.read_csv(f)["v"].to_pylist()
        assert peer == [int(contents[key].split()[1])]
        for spelled in spellings:
            assert values(f"s3://{BUCKET}/esc/{spelled}") == peer, spelled
    # Without a key of that spelling, a glob is a glob.
    assert values(f"s3://{BUCKET}/esc/run[12].csv") == [2]
    assert values(f"s3://{BUCKET}/esc/run*.csv") == [2, 1]  # run1.csv, run[1].csv
    # An escaped key that is not there: S3's NoSuchKey for the key as meant.
    proc = run(sluice, creds(s3), "schema", f"s3://{BUCKET}/esc/run\\[9\\].csv")
    check_clean_failure(proc)
    err = proc.stderr.decode()
    assert f"s3://{BUCKET}/esc/run[9].csv" in err and "NoSuchKey" in err, err


def test_a_glob_that_spells_a_hidden_name_matches_it(sluice, s3, tmp_path):
    """As locally (test_location): an S3 glob whose segment starts with '_'
    or '.' itself matches such keys, as Python's glob and DuckDB do; it
    matched nothing ("no objects match this pattern")."""
    import glob
    from test_location import HIDDEN_FILES, HIDDEN_GLOBS, make_hidden_tree
    root = s3["data"] / BUCKET / "hid"
    make_hidden_tree(root)
    for pattern in HIDDEN_GLOBS:
        peer = sorted(HIDDEN_FILES.index(str(Path(p).relative_to(root)))
                      for p in glob.glob(f"{root}/{pattern}", recursive=True))
        got = read_location(sluice, creds(s3), f"s3://{BUCKET}/hid/{pattern}",
                            tmp_path / "o.arrows")
        assert sorted(got["v"].to_pylist()) == peer, pattern
    got = read_location(sluice, creds(s3), f"s3://{BUCKET}/hid/*.csv", tmp_path / "o.arrows")
    assert got["v"].to_pylist() == [0]


def test_a_prefix_named_without_its_slash_reads_as_that_prefix(sluice, scripted, s3, tmp_path):
    """s3://b/logs that is no object (404 NoSuchKey) but has objects under
    logs/ reads them, as pyarrow.dataset reads "b/logs" and as a local
    directory is read; it was a bare NoSuchKey. An object of that name is
    still the object, and a name with nothing under it keeps S3's error.
    s3://bucket (no '/') says to write s3://bucket/."""
    pafs = pytest.importorskip("pyarrow.fs")
    import pyarrow.dataset as pads
    # The peer, against s3s-fs: pyarrow reads the prefix as a directory.
    root = s3["data"] / BUCKET / "logs"
    root.mkdir()
    for i in range(3):
        (root / f"p{i}.csv").write_text(f"v\n{i}\n")
    fs = pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region="us-east-1",
                           endpoint_override=s3["endpoint"], scheme="http")
    peer = sorted(pads.dataset(f"{BUCKET}/logs", filesystem=fs, format="csv")
                  .to_table()["v"].to_pylist())
    assert peer == [0, 1, 2]
    # sluice, against a server that answers a missing key as S3 does (404;
    # s3s-fs answers a GET of a directory with 500).
    keys = [f"logs/p{i}.csv" for i in range(3)]
    scripted.pages = [(200, list_page(keys))]
    for i, key in enumerate(keys):
        scripted.objects[key] = f"v\n{i}\n".encode()
    scripted.objects["one"] = b"v\n7\n"
    env = scripted_env(scripted)
    got = read_location(sluice, env, f"s3://{BUCKET}/logs", tmp_path / "o.arrows")
    assert sorted(got["v"].to_pylist()) == peer
    lists = scripted.list_requests()
    assert [r["query"]["prefix"] for r in lists] == [["logs/"]]
    scripted.requests.clear()
    assert read_location(sluice, env, f"s3://{BUCKET}/one", tmp_path / "o.arrows")[
        "v"].to_pylist() == [7]
    assert not scripted.list_requests()  # an object: no listing
    # Objects found under it that then fail: that error, not the GET's 404.
    scripted.pages = [(200, list_page(keys))]
    proc = run(sluice, env, "cat", "-c", "nosuch", f"s3://{BUCKET}/logs")
    check_clean_failure(proc)
    assert "no column 'nosuch'" in proc.stderr.decode() and "404" not in proc.stderr.decode()
    scripted.pages = [(200, list_page([]))]
    proc = run(sluice, env, "schema", f"s3://{BUCKET}/nothing")
    check_clean_failure(proc)
    assert "404" in proc.stderr.decode() and f"s3://{BUCKET}/nothing:" in proc.stderr.decode()
    proc = run(sluice, env, "schema", f"s3://{BUCKET}")
    check_clean_failure(proc)
    assert f"(every object in the bucket: s3://{BUCKET}/)" in proc.stderr.decode()


def test_a_directory_marker_spelled_as_a_glob_is_not_an_object(sluice, scripted, tmp_path):
    """A glob ending in '/' (p[1]/) whose spelling is a directory marker's
    key is still a glob over directories: the marker is no object."""
    scripted.pages = [(200, list_page(["p[1]/", "p1/x/a.csv"]))]
    scripted.objects["p1/x/a.csv"] = b"v\n1\n"
    got = read_location(sluice, scripted_env(scripted), f"s3://{BUCKET}/p[1]/",
                        tmp_path / "o.arrows")
    assert got["v"].to_pylist() == [1]
