#!/usr/bin/env bash
# Sets up a Debian 12 machine for sluice, builds it, and runs it on the bundled
# sample. Safe to run again: installed packages are left alone, the build is
# incremental.
#
#   scripts/setup.sh            install dependencies, build Release into build/,
#                               run the sample job
#   scripts/setup.sh --deps     install dependencies only (scripts/test.sh uses this)
#   scripts/setup.sh --sample   run the sample job only, with $SLUICE_BIN
#                               (default build/sluice), output in $SAMPLE_OUT
#
# Environment:
#   BUILD_ROOT   where build directories go (default: the repository root)
#   PYTHON       the Python interpreter to use (default: python3 on PATH)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_ROOT="${BUILD_ROOT:-$ROOT}"
PYTHON="${PYTHON:-python3}"
JOBS="${JOBS:-2}"

# Build tools, sanitizer/libFuzzer runtimes, the codec libraries libsluice
# links (see pkg_check_modules / find_library in CMakeLists.txt), cmocka.
APT_PACKAGES=(
  cmake ninja-build gcc g++ clang libclang-rt-14-dev llvm pkg-config
  libzstd-dev liblz4-dev zlib1g-dev libdeflate-dev libisal-dev libdragonbox-dev liblzma-dev libbz2-dev
  libsnappy-dev libbrotli-dev libjansson-dev libxxhash-dev libcmocka-dev
  avro-bin libavro-dev maven openjdk-17-jdk-headless
  libcurl4-openssl-dev libssl-dev openssl nginx-light
)

# s3s-fs (crates.io), an S3 server that verifies SigV4, for tests/py/test_s3.py,
# built into .cache/s3s-fs/ (git-ignored). 0.14.1 is the newest release that
# builds with rustc 1.95.
S3S_FS_VERSION=0.14.1
# Built with three changes (patch_s3s_fs), so that the server, not the
# readers, is what the W3 figures and the peers' cells measure:
# - GetObject streams the file in 1 MiB reads, not 4 KiB: each read is a hop
#   through tokio's blocking pool, so the stock server serves ~0.15 GB/s on
#   loopback here (~1.4 GB/s with the change);
# - HeadObject of a key that is a directory (a "prefix" such as bench/big)
#   answers 404 NoSuchKey, as S3 does, not 500: pyarrow's S3FileSystem
#   HEADs a dataset's prefix first;
# - a suffix range longer than the object (bytes=-65536 of a 4 KiB object)
#   returns the whole object, as S3 does, not 500: polars asks for one.
S3S_FS_BUILD="$S3S_FS_VERSION+read1m.head-dir.suffix"

# Java Avro's avro-tools (Maven Central) for the Avro interop tests and bench
# W2, cached in .cache/avro-tools/ (git-ignored).
AVRO_TOOLS_VERSION=1.12.2

# Apache Cassandra's server jars (Maven Central; version pinned in
# tests/cassandra/pom.xml) for the cql:// tests, which start a node on loopback
# (tests/py/cassandra_node.py); cached in .cache/cassandra/lib (git-ignored).
CASSANDRA_POM="$ROOT/tests/cassandra/pom.xml"

log() { printf '== setup: %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_deps() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    log "Debian packages already installed"
  fi

  if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "setup: $PYTHON not found; set PYTHON to a Python 3.11 interpreter with pip" >&2
    exit 1
  fi
  log "pip install -r requirements-dev.txt ($("$PYTHON" --version 2>&1))"
  "$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore -r "$ROOT/requirements-dev.txt"
  fetch_avro_tools
  fetch_cassandra
  build_s3s_fs
}

# The three changes of S3S_FS_BUILD's comment, each checked: a change that no
# longer applies fails the set-up rather than build a server that differs.
patch_s3s_fs() {
  local src="$1"
  perl -0pi -e 's/ReaderStream::with_capacity\(file, 4096\)/ReaderStream::with_capacity(file, 1 << 20)/' "$src"
  perl -0pi -e 's/(async fn head_object.*?)if !path\.exists\(\) \{/$1if !path.is_file() {/s' "$src"
  perl -0pi -e 's/Some\(Range::Suffix \{ length \}\) => \{\s*let neg_offset = length\.numeric_cast::<i64>\(\)\.neg\(\);\s*try_!\(file\.seek\(io::SeekFrom::End\(neg_offset\)\)\.await\);/Some(Range::Suffix { .. }) => {\n                try_!(file.seek(io::SeekFrom::Start(file_len - content_length)).await);/' "$src"
  local want
  for want in 'ReaderStream::with_capacity(file, 1 << 20)' 'if !path.is_file() {' \
      'io::SeekFrom::Start(file_len - content_length)'; do
    grep -qF "$want" "$src" ||
        { echo "setup: an s3s-fs patch no longer applies to $src (no '$want')" >&2; exit 1; }
  done
}

build_s3s_fs() {
  local root="$ROOT/.cache/s3s-fs"
  local stamp="$root/version"
  # A machine-wide copy outside the work tree spares fresh clones (CI) the build.
  local shared="${XDG_CACHE_HOME:-$HOME/.cache}/sluice/s3s-fs-$S3S_FS_BUILD"
  if [ -x "$root/bin/s3s-fs" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$S3S_FS_BUILD" ]; then
    log "s3s-fs $S3S_FS_BUILD already in $root"
    return
  fi
  if [ -x "$shared/s3s-fs" ]; then
    log "s3s-fs $S3S_FS_BUILD from $shared"
    mkdir -p "$root/bin"
    cp "$shared/s3s-fs" "$root/bin/s3s-fs"
    echo "$S3S_FS_BUILD" > "$stamp"
    return
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    log "cargo not found: tests/py/test_s3.py will be skipped"
    return
  fi
  log "cargo build s3s-fs $S3S_FS_BUILD into $root"
  # The crate's source, from crates.io through cargo (a project that depends
  # on it, fetched), then the read size patched: a patch that no longer
  # applies fails the set-up rather than build the stock server.
  local work="$ROOT/.cache/s3s-fs-src"
  rm -rf "$work" && mkdir -p "$work/fetch/src"
  printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\ns3s-fs = "=%s"\n' \
      "$S3S_FS_VERSION" > "$work/fetch/Cargo.toml"
  : > "$work/fetch/src/lib.rs"
  cargo fetch -q --manifest-path "$work/fetch/Cargo.toml"
  local crate
  crate="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/s3s-fs-"$S3S_FS_VERSION".crate | head -n 1)"
  tar -xzf "$crate" -C "$work"
  patch_s3s_fs "$work/s3s-fs-$S3S_FS_VERSION/src/s3.rs"
  CARGO_TARGET_DIR="$ROOT/.cache/s3s-fs-target" cargo install -q --path "$work/s3s-fs-$S3S_FS_VERSION" \
      --features binary --locked --root "$root" -j "$JOBS"
  echo "$S3S_FS_BUILD" > "$stamp"
  rm -rf "$ROOT/.cache/s3s-fs-target" "$work"
  mkdir -p "$shared" && cp "$root/bin/s3s-fs" "$shared/s3s-fs" || true
}

fetch_avro_tools() {
  local dir="$ROOT/.cache/avro-tools"
  local jar="$dir/avro-tools-$AVRO_TOOLS_VERSION.jar"
  if [ -s "$jar" ]; then
    log "avro-tools $AVRO_TOOLS_VERSION already in $dir"
    return
  fi
  log "mvn dependency:copy org.apache.avro:avro-tools:$AVRO_TOOLS_VERSION"
  mkdir -p "$dir"
  mvn -q -B dependency:copy -Dartifact="org.apache.avro:avro-tools:$AVRO_TOOLS_VERSION" \
      -DoutputDirectory="$dir"
  [ -s "$jar" ] || { echo "setup: $jar was not fetched" >&2; exit 1; }
}

fetch_cassandra() {
  local dir="$ROOT/.cache/cassandra/lib"
  local version
  version="$(sed -n 's:.*<cassandra.version>\(.*\)</cassandra.version>.*:\1:p' "$CASSANDRA_POM")"
  [ -n "$version" ] || { echo "setup: no <cassandra.version> in $CASSANDRA_POM" >&2; exit 1; }
  if [ -s "$dir/cassandra-all-$version.jar" ]; then
    log "Cassandra $version jars already in $dir"
    return
  fi
  log "mvn dependency:copy-dependencies org.apache.cassandra:cassandra-all:$version"
  rm -rf "$dir"  # no jars of another version on the node's classpath
  mkdir -p "$dir"
  mvn -q -B -f "$CASSANDRA_POM" dependency:copy-dependencies -DoutputDirectory="$dir"
  [ -s "$dir/cassandra-all-$version.jar" ] || { echo "setup: Cassandra jars were not fetched into $dir" >&2; exit 1; }
}

build_release() {
  local dir="$BUILD_ROOT/build"
  log "configure + build Release in $dir"
  local gen=(-G Ninja)
  [ -f "$dir/CMakeCache.txt" ] && gen=()  # keep the generator it was made with
  cmake -S "$ROOT" -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DPython3_EXECUTABLE="$("$PYTHON" -c 'import sys; print(sys.executable)')" >/dev/null
  cmake --build "$dir" -j "$JOBS"
}

run_sample() {
  local sluice="${SLUICE_BIN:-$BUILD_ROOT/build/sluice}"
  local sample="$ROOT/scripts/sample/sample.arrow"
  local out="${SAMPLE_OUT:-$BUILD_ROOT/build/sample}"
  mkdir -p "$out"
  log "sample job on $sample"
  echo "\$ sluice schema sample.arrow"
  "$sluice" schema "$sample"
  echo "\$ sluice cat sample.arrow   (first 10 lines of $out/cat.txt)"
  "$sluice" cat "$sample" > "$out/cat.txt"
  head -n 10 "$out/cat.txt"
  echo "\$ sluice stats sample.arrow"
  "$sluice" stats "$sample"
  echo "\$ sluice convert sample.arrow $out/sample.arrows"
  rm -f "$out/sample.arrows"
  "$sluice" convert "$sample" "$out/sample.arrows"
  "$PYTHON" "$ROOT/scripts/sample/verify.py" "$sample" "$out/sample.arrows"
}

case "${1:-}" in
  --deps) install_deps ;;
  --sample) run_sample ;;
  "") install_deps; build_release; run_sample; log "done: CLI at $BUILD_ROOT/build/sluice" ;;
  *) echo "usage: $0 [--deps|--sample]" >&2; exit 2 ;;
esac
