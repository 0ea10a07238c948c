"""Local output files (src/io/sl_sink.c) end to end through the CLI: what a
replaced file keeps, what may be replaced, names, devices, and what an
error says. Each case is compared with what cp or pyarrow does.

Some cases need root (to own files as another user) and setpriv (to run
sluice as nobody); they are skipped where those are missing.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile

import pytest

NOBODY = 65534
CSV = b"a,b\n1,x\n2,y\n"


@pytest.fixture
def shared_dir():
    """A directory anyone may enter (pytest's tmp_path is root's alone)."""
    d = tempfile.mkdtemp(prefix="sluice-sink-", dir="/tmp")
    os.chmod(d, 0o755)
    with open(os.path.join(d, "in.csv"), "wb") as f:
        f.write(CSV)
    os.chmod(os.path.join(d, "in.csv"), 0o644)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def need_root_and_setpriv(sluice_bin):
    if os.geteuid() != 0:
        pytest.skip("needs root, to make files of another user")
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv, to run as nobody")
    # The build tree must be reachable by nobody.
    probe = as_nobody([sluice_bin, "--version"])
    if probe.returncode != 0:
        pytest.skip(f"nobody cannot run {sluice_bin}: {probe.stderr!r}")


def as_nobody(cmd, **kw):
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           *map(str, cmd)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=120, **kw)


def convert(sluice_bin, src, dst, *extra):
    return subprocess.run([sluice_bin, "convert", "-q", str(src), str(dst), *map(str, extra)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)


def test_replace_keeps_owner_and_never_makes_a_setuid_file_of_the_writer(sluice_bin, shared_dir):
    """A root run replacing nobody's 6755 file leaves it nobody's and 6755,
    as cp (which writes in place) does; it gave a setuid root file before.
    A writer that cannot keep the owner drops the setuid/setgid bits, as the
    kernel does for cp's write."""
    need_root_and_setpriv(sluice_bin)
    os.chmod(shared_dir, 0o1777)
    src = os.path.join(shared_dir, "in.csv")
    for name in ("out.csv", "cp.csv"):
        p = os.path.join(shared_dir, name)
        assert as_nobody(["sh", "-c", f"echo old > {p} && chmod 6755 {p}"]).returncode == 0
    proc = convert(sluice_bin, src, os.path.join(shared_dir, "out.csv"))
    assert proc.returncode == 0, proc.stderr
    subprocess.run(["cp", src, os.path.join(shared_dir, "cp.csv")], check=True)
    ours = os.stat(os.path.join(shared_dir, "out.csv"))
    peer = os.stat(os.path.join(shared_dir, "cp.csv"))
    assert (ours.st_uid, ours.st_gid) == (peer.st_uid, peer.st_gid) == (NOBODY, NOBODY)
    assert stat.S_IMODE(ours.st_mode) == stat.S_IMODE(peer.st_mode) == 0o6755
    with open(os.path.join(shared_dir, "out.csv"), "rb") as f:
        assert f.read() == CSV

    # nobody replacing root's 6777 file (which it may write) cannot keep the
    # owner: the new file is nobody's, without the two bits; cp's write
    # loses them too (no CAP_FSETID). (Not sticky: there only a file's owner
    # may replace it.)
    os.chmod(shared_dir, 0o777)
    for name in ("root.csv", "rootcp.csv"):
        p = os.path.join(shared_dir, name)
        with open(p, "wb") as f:
            f.write(b"old\n")
        os.chmod(p, 0o6777)
    proc = as_nobody([sluice_bin, "convert", "-q", src, os.path.join(shared_dir, "root.csv")])
    assert proc.returncode == 0, proc.stderr
    assert as_nobody(["cp", src, os.path.join(shared_dir, "rootcp.csv")]).returncode == 0
    ours = os.stat(os.path.join(shared_dir, "root.csv"))
    peer = os.stat(os.path.join(shared_dir, "rootcp.csv"))
    assert ours.st_uid == NOBODY
    assert stat.S_IMODE(ours.st_mode) == stat.S_IMODE(peer.st_mode) == 0o777


def test_a_file_the_writer_may_not_write_is_refused(sluice_bin, shared_dir):
    """A 0444 file of the writer's own, or another user's file in a directory
    the writer may write, is refused with "Permission denied" and left as it
    was, as cp refuses it; the rename alone would have replaced it. Root
    replaces a 0444 file, as cp does."""
    need_root_and_setpriv(sluice_bin)
    os.chown(shared_dir, NOBODY, NOBODY)
    src = os.path.join(shared_dir, "in.csv")
    mine, theirs = os.path.join(shared_dir, "mine.csv"), os.path.join(shared_dir, "theirs.csv")
    assert as_nobody(["sh", "-c", f"echo PROTECTED > {mine} && chmod 444 {mine}"]).returncode == 0
    with open(theirs, "wb") as f:
        f.write(b"PROTECTED\n")
    os.chmod(theirs, 0o644)
    for target in (mine, theirs):
        proc = as_nobody([sluice_bin, "convert", "-q", src, target])
        peer = as_nobody(["cp", src, target])
        assert peer.returncode != 0 and b"Permission denied" in peer.stderr
        assert proc.returncode == 1, proc
        assert f"{target}: cannot replace the existing file: Permission denied".encode() \
            in proc.stderr
        with open(target, "rb") as f:
            assert f.read() == b"PROTECTED\n"
    assert sorted(os.listdir(shared_dir)) == ["in.csv", "mine.csv", "theirs.csv"]
    # Root may, as with cp.
    proc = convert(sluice_bin, src, mine)
    assert proc.returncode == 0, proc.stderr
    with open(mine, "rb") as f:
        assert f.read() == CSV
    assert stat.S_IMODE(os.stat(mine).st_mode) == 0o444 and os.stat(mine).st_uid == NOBODY


@pytest.mark.parametrize("length", [243, 244, 250, 255])
def test_a_long_file_name_that_fits_is_written(sluice_bin, tmp_path, length):
    """Names of up to NAME_MAX (255) bytes are written, as pyarrow writes them;
    the temporary name ".<name>.tmp-XXXXXX" is 12 bytes longer, and names of
    244-255 bytes failed with "File name too long" blamed on it. Nothing but
    the file is left."""
    pacsv = pytest.importorskip("pyarrow.csv")
    (tmp_path / "in.csv").write_bytes(CSV)
    out = tmp_path / ("a" * (length - 4) + ".csv")
    proc = convert(sluice_bin, tmp_path / "in.csv", out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == CSV
    peer = tmp_path / ("b" * (length - 4) + ".csv")
    pacsv.write_csv(pacsv.read_csv(tmp_path / "in.csv"), peer)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in.csv", out.name, peer.name])


def test_a_file_name_past_name_max_is_refused_up_front(sluice_bin, tmp_path):
    """256 bytes: ENAMETOOLONG naming the file, as pyarrow's OSError, not an
    error about a temporary file, and nothing left behind."""
    pacsv = pytest.importorskip("pyarrow.csv")
    (tmp_path / "in.csv").write_bytes(CSV)
    out = tmp_path / ("a" * 252 + ".csv")
    proc = convert(sluice_bin, tmp_path / "in.csv", out)
    assert proc.returncode == 1
    assert f"{out}: cannot create the file: File name too long".encode() in proc.stderr
    with pytest.raises(OSError, match="too long"):
        pacsv.write_csv(pacsv.read_csv(tmp_path / "in.csv"), str(out))
    assert [p.name for p in tmp_path.iterdir()] == ["in.csv"]


def _acl_mask(path):
    """The mask entry's permission bits of a file's access ACL, None without one."""
    import struct
    try:
        acl = os.getxattr(path, "system.posix_acl_access")
    except OSError:
        return None
    return [p for t, p, _ in struct.iter_unpack("<HHI", acl[4:]) if t == 0x10]


def test_a_new_file_is_made_as_open_makes_it(sluice_bin, tmp_path):
    """A new file gets what open(path, O_CREAT, 0666) gives: 0666 less the
    umask, or, under a directory's default ACL (which the kernel applies
    instead of the umask), that ACL with its mask rw-. A chmod to
    0666 & ~umask after creating the file rewrote the mask to r--: a group
    the ACL lets write was denied. A replaced file keeps its mode whatever
    the umask."""
    (tmp_path / "in.csv").write_bytes(CSV)
    src = tmp_path / "in.csv"

    def run_with_umask(mask, *args):
        return subprocess.run([sluice_bin, "convert", "-q", *map(str, args)], timeout=120,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              preexec_fn=lambda: os.umask(mask))

    for mask in (0o022, 0o077, 0o002):
        out = tmp_path / f"new{mask:o}.csv"
        assert run_with_umask(mask, src, out).returncode == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask
    old = tmp_path / "old.csv"
    old.write_bytes(b"old\n")
    for mode in (0o600, 0o640, 0o664):
        os.chmod(old, mode)
        assert run_with_umask(0o022, src, old).returncode == 0
        assert stat.S_IMODE(old.stat().st_mode) == mode and old.read_bytes() == CSV

    import struct
    acl_dir = tmp_path / "acl"
    acl_dir.mkdir()
    entry = lambda tag, perm, ident=0xFFFFFFFF: struct.pack("<HHI", tag, perm, ident)
    try:  # user::rwx group::rwx group:65534:rwx mask::rwx other::r-x
        os.setxattr(acl_dir, "system.posix_acl_default", struct.pack("<I", 2) + entry(1, 7)
                    + entry(4, 7) + entry(8, 7, NOBODY) + entry(0x10, 7) + entry(0x20, 5))
    except OSError as e:
        pytest.skip(f"no POSIX ACLs here: {e}")
    old_mask = os.umask(0o022)
    try:
        with open(acl_dir / "plain.csv", "w") as f:
            f.write("x")
    finally:
        os.umask(old_mask)
    assert run_with_umask(0o022, src, acl_dir / "cli.csv").returncode == 0
    plain, ours = acl_dir / "plain.csv", acl_dir / "cli.csv"
    assert _acl_mask(plain) == [6]
    assert _acl_mask(ours) == _acl_mask(plain)
    assert stat.S_IMODE(ours.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o664


def test_a_link_under_dev_to_a_regular_file_is_replaced_atomically(sluice_bin, tmp_path):
    """A link under /dev/ (here /dev/shm) to a regular file is followed and
    its target replaced like any file's: an input error leaves it whole.
    It was opened in place with O_TRUNC for its /dev/ prefix, and an input
    error left it empty. /dev/stdout still writes where the shell
    redirected (in place)."""
    shm = "/dev/shm"
    if not (os.path.isdir(shm) and os.access(shm, os.W_OK)):
        pytest.skip("no writable /dev/shm")
    precious = tmp_path / "precious.csv"
    precious.write_bytes(b"PRECIOUS\n")
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"a\n" + b"1\n" * 20000 + b"oops\n")
    good = tmp_path / "good.csv"
    good.write_bytes(b"a\n1\n2\n")
    link = os.path.join(shm, f"sluice-test-{os.getpid()}.csv")
    plain = os.path.join(shm, f"sluice-test-{os.getpid()}-plain.csv")
    os.symlink(precious, link)
    try:
        proc = convert(sluice_bin, bad, link, "--schema", "a:int64")
        assert proc.returncode == 1 and b"cannot parse 'oops'" in proc.stderr
        assert precious.read_bytes() == b"PRECIOUS\n"
        inode = precious.stat().st_ino
        proc = convert(sluice_bin, good, link)
        assert proc.returncode == 0, proc.stderr
        assert os.path.islink(link) and precious.read_bytes() == b"a\n1\n2\n"
        assert precious.stat().st_ino != inode  # renamed into place
        with open(plain, "wb") as f:
            f.write(b"PRECIOUS\n")
        proc = convert(sluice_bin, bad, plain, "--schema", "a:int64")
        assert proc.returncode == 1
        with open(plain, "rb") as f:
            assert f.read() == b"PRECIOUS\n"
    finally:
        os.unlink(link)
        if os.path.exists(plain):
            os.unlink(plain)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "good.csv", "precious.csv"]
    # A link to the descriptor is written in place: to the file stdout is.
    redirected = tmp_path / "redirected.csv"
    with open(redirected, "wb") as f:
        proc = subprocess.run([sluice_bin, "convert", "-q", "-t", "csv", str(good), "/dev/stdout"],
                              stdout=f, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert redirected.read_bytes() == b"a\n1\n2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["bad.csv", "good.csv", "precious.csv", "redirected.csv"]


def test_a_full_staging_file_of_an_s3_output_is_named(sluice_bin, tmp_path):
    """An s3:// output is staged in $TMPDIR; when that file cannot grow (here
    RLIMIT_FSIZE, as a full disk), the message says so and names the
    directory, rather than blaming the object. No request is made: the
    write fails before any upload."""
    import resource
    import signal
    big = tmp_path / "big.csv"
    big.write_bytes(b"a,b\n" + b"".join(b"%d,%d\n" % (i, i * 7) for i in range(200000)))
    staging = tmp_path / "staging"
    staging.mkdir()

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write(2) fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, 256 << 10))

    env = dict(os.environ, TMPDIR=str(staging), AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y")
    proc = subprocess.run([sluice_bin, "convert", "-q", str(big), "s3://bucket/out.csv",
                           "--endpoint-url", "http://127.0.0.1:9", "--region", "us-east-1"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, env=env,
                          preexec_fn=limit)
    assert proc.returncode == 1, proc
    assert (f"s3://bucket/out.csv: write failed (the local staging file in '{staging}', "
            f"TMPDIR): File too large").encode() in proc.stderr, proc.stderr
    assert os.listdir(staging) == []


def test_partitioned_overwrites_keep_modes(sluice_bin, tmp_path):
    """overwrite_or_ignore keeps a replaced file's mode (600), and
    delete_matching a replaced partition directory's (700), as pyarrow's
    write_dataset keeps both (it writes the file in place, and empties the
    directory); they came back 644 and 755."""
    ds = pytest.importorskip("pyarrow.dataset")
    import pyarrow as pa
    src = tmp_path / "in.csv"
    src.write_bytes(b"k,a\n0,1\n1,2\n0,3\n")

    def run(dst, behavior):
        proc = subprocess.run([sluice_bin, "convert", "-q", str(src), str(dst), "-t", "csv",
                               "--partition-by", "k", "--existing-data", behavior],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        assert proc.returncode == 0, proc.stderr

    def peer(dst, behavior):
        ds.write_dataset(pa.table({"k": [0, 1, 0], "a": [1, 2, 3]}), dst, format="csv",
                         partitioning=["k"], partitioning_flavor="hive",
                         existing_data_behavior=behavior, basename_template="part-{i}.csv")

    for name, write in (("ours", run), ("pyarrow", peer)):
        d = tmp_path / name
        write(d, "error" if write is run else "overwrite_or_ignore")
        os.chmod(d / "k=0" / "part-0.csv", 0o600)
        os.chmod(d / "k=1", 0o700)
        write(d, "overwrite_or_ignore")
        assert stat.S_IMODE((d / "k=0" / "part-0.csv").stat().st_mode) == 0o600, name
        write(d, "delete_matching")
        assert stat.S_IMODE((d / "k=1").stat().st_mode) == 0o700, name
        assert sorted(p.name for p in (d / "k=1").iterdir()) == ["part-0.csv"], name


# Output names with a newline, a control byte and bytes that are not UTF-8,
# and a bidirectional control (which reorders what follows it on a line).
ODD_NAMES = [b"a\nb", b"a\x01\xffb", "a\u202eb".encode()]


def read_side_spelling(sluice_bin, path: bytes, *extra) -> bytes:
    """How the read side shows `path` in its messages: the text before
    ": " in the error of reading it (there is no such input)."""
    proc = subprocess.run([sluice_bin, "schema", path, *extra], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 1 and proc.stderr.startswith(b"sluice: "), proc
    return proc.stderr[len(b"sluice: "):].split(b": ")[0]


def one_clean_line(stderr: bytes) -> str:
    text = stderr.decode("utf-8")  # not UTF-8 raises
    assert text.count("\n") == 1 and text.endswith("\n"), text
    assert all(ch >= " " and not ("\x7f" <= ch <= "\x9f") and ch not in "\u202a\u202b\u202c"
               "\u202d\u202e\u2066\u2067\u2068\u2069" for ch in text[:-1]), text
    return text


@pytest.mark.parametrize("name", ODD_NAMES)
def test_output_names_are_shown_as_input_names_are(sluice_bin, tmp_path, name):
    """A write's messages show the output's name by the read side's one rule
    (one line: \\n, \\x01, \\xff, \\u202e), as they show an input's: the
    sink's errors (a temporary file it cannot make), a writer's error led by
    the output's name (once), the CLI's own, a partitioned write's and an S3
    upload's. They printed the raw bytes (the CLI turned a newline into a
    space)."""
    d = os.fsencode(tmp_path)
    blocker = d + b"/file"
    with open(blocker, "wb") as f:
        f.write(b"x")  # a file, not a directory: nothing can be made below it
    src = d + b"/in.csv"
    with open(src, "wb") as f:
        f.write(CSV)

    def fails(*args, env=None):
        proc = subprocess.run([sluice_bin, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120, env=env)
        assert proc.returncode in (1, 2), proc
        return one_clean_line(proc.stderr)

    # The sink: no temporary file can be made beside the output.
    out = blocker + b"/" + name + b".csv"
    shown = read_side_spelling(sluice_bin, out).decode()
    err = fails("convert", "-q", src, out)
    assert f"sluice: {shown}: cannot create a temporary file in " in err, err
    # A writer's error, which the write leads with the output's name.
    import pyarrow as pa
    import pyarrow.feather as feather
    feather.write_feather(pa.table({"d": pa.array([1], pa.duration("s"))}),
                          os.fsdecode(d + b"/dur.arrow"))
    out = d + b"/" + name + b".avro"
    shown = read_side_spelling(sluice_bin, out).decode()
    err = fails("convert", "-q", d + b"/dur.arrow", out)
    assert err == f"sluice: {shown}: avro: column 'd': type duration[s] has no Avro mapping\n", err
    # The CLI's own: no format for the name.
    out = d + b"/" + name + b".zzz"
    shown = read_side_spelling(sluice_bin, out).decode()
    assert f"'{shown}'" in fails("convert", src, out)
    assert f"sluice: {shown}: no output format" in fails("cat", src, "-o", out)
    # A partitioned write.
    out = d + b"/" + name
    shown = read_side_spelling(sluice_bin, out).decode()
    err = fails("convert", "-q", src, "-t", "csv", "--partition-by", "zz", out)
    assert f"sluice: {shown}: no column 'zz' to partition by" in err, err
    # An S3 upload (to a port that refuses connections: no request is made).
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        port = s.getsockname()[1]
        env = dict(os.environ, AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y")
        remote = ["--endpoint-url", f"http://127.0.0.1:{port}", "--region", "us-east-1"]
        out = b"s3://bucket/" + name + b".csv"
        shown = read_side_spelling(sluice_bin, out, *remote).decode()
        err = fails("convert", "-q", src, out, *remote, env=env)
        assert err.startswith(f"sluice: {shown}: PutObject: "), err
