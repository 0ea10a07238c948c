"""A real single-node Apache Cassandra 5.0 on loopback, for the cql:// interop
tests.

The server jars (org.apache.cassandra:cassandra-all, pinned in
tests/cassandra/pom.xml) are fetched by scripts/setup.sh into
.cache/cassandra/lib (git-ignored); `java` (JDK 17) runs
org.apache.cassandra.service.CassandraDaemon from them in the foreground. Each
node lives in its own temporary directory (yaml, logback.xml, data,
commitlog, ...) which stop() removes. Authentication is on
(PasswordAuthenticator + CassandraAuthorizer); start() returns once the
default superuser cassandra/cassandra can log in. The native port also
speaks TLS (optional, so plain clients work too) with a certificate for
localhost / 127.0.0.1 signed by a CA made for the node (`node.ca_file`), and
asks TLS clients for a certificate signed by that CA (require_client_auth):
`node.client_cert` / `node.client_key` is one, `node.rogue_cert` /
`node.rogue_key` one signed by another CA.

    node = CassandraNode()
    node.start()
    session = node.session()      # cassandra-driver Session, logged in
    ...
    node.stop()

Environment:
  SLUICE_CASSANDRA_LIB   directory of the server jars (default .cache/cassandra/lib)
  SLUICE_CASSANDRA_KEEP  if set, stop() keeps the node's directory (for its log)
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_LIB = REPO / ".cache" / "cassandra" / "lib"
SERVER_JAR_PREFIX = "cassandra-all-"

USERNAME = "cassandra"
PASSWORD = "cassandra"

# From Cassandra 5.0's conf/jvm17-server.options (JPMS section + netty).
JDK17_FLAGS = [
    "-Djdk.attach.allowAttachSelf=true",
    "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports", "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports", "java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports", "java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports", "java.sql/java.sql=ALL-UNNAMED",
    "--add-exports", "java.base/java.lang.ref=ALL-UNNAMED",
    "--add-exports", "jdk.unsupported/sun.misc=ALL-UNNAMED",
    "--add-exports", "jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
    "--add-exports", "jdk.attach/sun.tools.attach=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens", "java.base/java.io=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens", "jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang=ALL-UNNAMED",
    "--add-opens", "java.base/java.util=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.useCacheForAllThreads=true",
    "-Dio.netty.allocator.maxOrder=11",
]

# A small heap suits a 2-core test box; G1 as in jvm17-server.options.
HEAP_FLAGS = ["-Xms512m", "-Xmx1g", "-Xss256k", "-XX:+UseG1GC", "-XX:G1HeapRegionSize=4m",
              "-XX:MaxGCPauseMillis=300", "-XX:+PerfDisableSharedMem",
              "-XX:+ExitOnOutOfMemoryError"]

# Startup shortcuts for a fresh single node: no wait for gossip to settle (there
# is no one to gossip with) and the default superuser is created right away
# instead of after 10 s.
FAST_START_FLAGS = [
    "-Dcassandra.skip_wait_for_gossip_to_settle=0",
    "-Dcassandra.superuser_setup_delay_ms=0",
    "-Dcassandra.ring_delay_ms=1000",
]

YAML = """\
# Written by tests/py/cassandra_node.py: a single test node on loopback.
cluster_name: sluice-test
num_tokens: 16
allocate_tokens_for_local_replication_factor: 1
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
authenticator: PasswordAuthenticator
authorizer: CassandraAuthorizer
role_manager: CassandraRoleManager
data_file_directories:
  - {root}/data
commitlog_directory: {root}/commitlog
saved_caches_directory: {root}/saved_caches
hints_directory: {root}/hints
cdc_raw_directory: {root}/cdc_raw
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_segment_size: 8MiB
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:{storage_port}"
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: {storage_port}
native_transport_port: {native_port}
start_native_transport: true
memtable_heap_space: 64MiB
memtable_offheap_space: 64MiB
concurrent_reads: 4
concurrent_writes: 4
concurrent_counter_writes: 4
concurrent_compactors: 1
key_cache_size: 8MiB
disk_failure_policy: stop
commit_failure_policy: stop
# TLS on the native port, optional: the driver connects in plain text, and
# sluice's tls=true connects through the same port (certificates made by
# make_certificates below).
client_encryption_options:
  enabled: true
  optional: true
  keystore: {root}/tls/node.p12
  keystore_password: {tls_password}
  store_type: PKCS12
  require_client_auth: true
  truststore: {root}/tls/trust.p12
  truststore_password: {tls_password}
"""

TLS_PASSWORD = "sluice-test"


def make_certificates(directory: Path) -> Path:
    """A test CA (ca.pem) and the node's key and certificate signed by it,
    for localhost and 127.0.0.1, as a PKCS12 keystore (node.p12), made with
    the openssl command; the CA as the node's truststore (trust.p12, by
    keytool: Java trusts no certificate of a PKCS12 file that openssl 3.0
    writes); a client certificate signed by the CA (client.pem, client.key)
    and one signed by another CA (rogue.pem, rogue.key). Returns the CA
    file, what clients trust."""
    directory.mkdir()

    def run(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=sluice test CA")
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "rogue_ca.key", "-out",
        "rogue_ca.pem", "-days", "2", "-subj", "/CN=another CA")
    for name, ca in (("client", "ca"), ("rogue", "rogue_ca")):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
            f"{name}.csr", "-subj", f"/CN=sluice {name}")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2")
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
                    "-keystore", "trust.p12", "-storetype", "PKCS12", "-storepass",
                    TLS_PASSWORD], cwd=directory, check=True, capture_output=True)
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr",
        "-subj", "/CN=localhost")
    (directory / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "node.pem", "-days", "2", "-extfile", "san.ext")
    run("pkcs12", "-export", "-in", "node.pem", "-inkey", "node.key", "-certfile", "ca.pem",
        "-out", "node.p12", "-passout", f"pass:{TLS_PASSWORD}")
    return directory / "ca.pem"

LOGBACK = """\
<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder>
      <pattern>%-5level [%thread] %date{{ISO8601}} %F:%L - %msg%n</pattern>
    </encoder>
  </appender>
  <root level="INFO">
    <appender-ref ref="FILE" />
  </root>
</configuration>
"""


def cassandra_lib() -> Path:
    env = os.environ.get("SLUICE_CASSANDRA_LIB")
    return Path(env) if env else DEFAULT_LIB


def cassandra_available() -> str | None:
    """None when a node can be started, else why not (for pytest.skip)."""
    lib = cassandra_lib()
    if not lib.is_dir() or not any(lib.glob(SERVER_JAR_PREFIX + "*.jar")):
        return (f"Cassandra jars not found in {lib} "
                "(scripts/setup.sh --deps fetches them with Maven)")
    if shutil.which("java") is None:
        return "java not found on PATH (Cassandra 5.0 needs JDK 17)"
    try:
        import cassandra.cluster  # noqa: F401
    except ImportError:
        return "cassandra-driver is not installed (see requirements-dev.txt)"
    return None


def _die_with_parent_hook():
    """A preexec_fn making the kernel SIGKILL the node when the process (the
    thread, strictly) that started it dies, so a killed pytest (a CTest
    timeout) leaves no node behind even though it runs in its own session.
    Linux only; elsewhere None."""
    try:
        prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def hook():
        prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    return hook


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CassandraNode:
    """One Cassandra node in a temporary directory, started by start() and
    removed by stop(). Also a context manager."""

    def __init__(self, start_timeout: float = 120.0):
        self.start_timeout = start_timeout
        self.host = "127.0.0.1"
        self.port: int | None = None          # CQL native transport port
        self.storage_port: int | None = None
        self.username = USERNAME
        self.password = PASSWORD
        self.root: Path | None = None         # the node's temporary directory
        self.ca_file: Path | None = None      # the CA that signed the node's TLS certificate
        self.client_cert: Path | None = None  # a client certificate the node accepts, and key
        self.client_key: Path | None = None
        self.rogue_cert: Path | None = None   # one signed by a CA the node does not trust
        self.rogue_key: Path | None = None
        self.log_path: Path | None = None     # logback file (system.log)
        self.start_seconds: float | None = None  # spawn to first login
        self.proc: subprocess.Popen | None = None
        self._stdout = None
        self._clusters: list = []
        self._cmd: list[str] | None = None  # the java command line (restart() runs it again)

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> "CassandraNode":
        """Starts the node and returns once the superuser can log in; raises
        RuntimeError (with the log tail) otherwise. The ports are picked free
        just before, so another process can take one in between: on "Address
        already in use" it tries once more with new ports."""
        reason = cassandra_available()
        if reason:
            raise RuntimeError(reason)
        try:
            return self._start_once()
        except RuntimeError as e:
            if "Address already in use" not in str(e):
                raise
            return self._start_once()

    def _start_once(self) -> "CassandraNode":
        self.root = Path(tempfile.mkdtemp(prefix="sluice-cassandra-"))
        for sub in ("data", "commitlog", "saved_caches", "hints", "cdc_raw", "triggers", "logs"):
            (self.root / sub).mkdir()
        self.port = free_port()
        self.storage_port = free_port()
        while self.storage_port == self.port:
            self.storage_port = free_port()
        self.ca_file = make_certificates(self.root / "tls")
        self.client_cert, self.client_key = self.ca_file.with_name("client.pem"), \
            self.ca_file.with_name("client.key")
        self.rogue_cert, self.rogue_key = self.ca_file.with_name("rogue.pem"), \
            self.ca_file.with_name("rogue.key")
        yaml_path = self.root / "cassandra.yaml"
        yaml_path.write_text(YAML.format(root=self.root, storage_port=self.storage_port,
                                         native_port=self.port, tls_password=TLS_PASSWORD))
        self.log_path = self.root / "logs" / "system.log"
        logback = self.root / "logback.xml"
        logback.write_text(LOGBACK.format(log=self.log_path))

        self._cmd = ["java", *HEAP_FLAGS, *JDK17_FLAGS, *FAST_START_FLAGS,
               "-Djava.net.preferIPv4Stack=true",
               f"-Dcassandra.config={yaml_path.as_uri()}",
               f"-Dcassandra.storagedir={self.root}",
               f"-Dcassandra.logdir={self.root / 'logs'}",
               f"-Dcassandra.triggers_dir={self.root / 'triggers'}",
               f"-Dlogback.configurationFile={logback}",
               "-Dcassandra-foreground=yes",
               # No JMX: cassandra.jmx.local.port unset means no JMX server, so
               # no third port to find and nothing for parallel runs to clash on.
               "-cp", str(cassandra_lib() / "*"),
               "org.apache.cassandra.service.CassandraDaemon"]
        return self._spawn()

    def _spawn(self) -> "CassandraNode":
        self._stdout = open(self.root / "logs" / "stdout.log", "ab")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self._cmd, cwd=self.root, stdin=subprocess.DEVNULL,
                                     stdout=self._stdout, stderr=subprocess.STDOUT,
                                     start_new_session=True,
                                     preexec_fn=_die_with_parent_hook())
        try:
            self._wait_ready(t0 + self.start_timeout)
        except BaseException:
            self.stop(keep=bool(os.environ.get("SLUICE_CASSANDRA_KEEP")))
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def kill(self) -> None:
        """SIGKILLs the node (a crash), keeping its directory: restart() starts
        it again on the same data and ports. Sessions of session() stay open
        (the driver reconnects)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None
        self._stdout.close()
        self._stdout = None

    def restart(self) -> "CassandraNode":
        """Starts a node killed by kill() again and returns once the superuser
        can log in (start_seconds: how long that took)."""
        return self._spawn()

    def _wait_ready(self, deadline: float) -> None:
        # 1. the CQL port accepts connections
        while True:
            self._check_alive()
            try:
                with socket.create_connection((self.host, self.port), timeout=1):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self._fail("the CQL port never opened")
            time.sleep(0.5)
        # 2. the default superuser can log in (created shortly after the port opens)
        last = None
        while True:
            self._check_alive()
            try:
                cluster, session = self._connect(connect_timeout=5)
                session.execute("SELECT release_version FROM system.local")
                cluster.shutdown()
                return
            except Exception as e:  # AuthenticationFailed / NoHostAvailable
                last = e
            if time.monotonic() > deadline:
                self._fail(f"login as {self.username} never succeeded: {last!r}")
            time.sleep(1)

    def _check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            self._fail(f"java exited with status {self.proc.returncode}")

    def _fail(self, what: str) -> None:
        raise RuntimeError(f"Cassandra node did not start: {what} (timeout "
                           f"{self.start_timeout:.0f} s); log tail:\n{self.log_tail()}")

    def log_tail(self, lines: int = 60) -> str:
        out = []
        for path in (self.log_path, self.root / "logs" / "stdout.log" if self.root else None):
            if path is not None and path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {path}\n" + "\n".join(text))
        return "\n".join(out) or "(no log written)"

    def stop(self, keep: bool | None = None) -> None:
        """Shuts down sessions made by session(), kills the node's process
        group and removes its directory (kept if SLUICE_CASSANDRA_KEEP is set).
        Safe to call twice."""
        for cluster in self._clusters:
            try:
                cluster.shutdown()
            except Exception:
                pass
        self._clusters.clear()
        if self.proc is not None:
            # SIGKILL: the data is thrown away, so the ~5 s of flushing a
            # SIGTERM shutdown does would be wasted.
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)
            self.proc = None
        if self._stdout is not None:
            self._stdout.close()
            self._stdout = None
        if keep is None:
            keep = bool(os.environ.get("SLUICE_CASSANDRA_KEEP"))
        if self.root is not None and not keep:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> "CassandraNode":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- clients -----------------------------------------------------------
    @property
    def contact(self) -> str:
        """host:port of the CQL native transport."""
        return f"{self.host}:{self.port}"

    def _connect(self, keyspace: str | None = None, connect_timeout: float = 10,
                 username: str | None = None, password: str | None = None):
        from cassandra.auth import PlainTextAuthProvider
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
        from cassandra.policies import RoundRobinPolicy

        profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(), request_timeout=30)
        cluster = Cluster(
            [self.host], port=self.port,
            auth_provider=PlainTextAuthProvider(username=username or self.username,
                                                password=password or self.password),
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
            protocol_version=5, connect_timeout=connect_timeout)
        try:
            session = cluster.connect(keyspace)
        except BaseException:
            cluster.shutdown()
            raise
        return cluster, session

    def session(self, keyspace: str | None = None, username: str | None = None,
                password: str | None = None):
        """A connected cassandra-driver Session (superuser unless username/
        password given). Its Cluster is shut down by stop()."""
        cluster, session = self._connect(keyspace, username=username, password=password)
        self._clusters.append(cluster)
        return session
