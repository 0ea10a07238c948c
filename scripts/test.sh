#!/usr/bin/env bash
# The test command (what .ci/run executes). Runs every check, keeps going past
# failures, prints a summary and exits non-zero if anything failed:
#
#   1. dependencies (scripts/setup.sh --deps)
#   2. gcc, Release, -Werror: build, then the whole CTest suite (C unit tests
#      and the Python interop tests against this build's CLI); the sample job
#      (scripts/setup.sh --sample) with that CLI; the install check:
#      `cmake --install` into a temporary prefix, then tests/install/check.sh
#      builds and runs a consumer with find_package(sluice) and with pkg-config;
#      the Python package: `pip install .` into a venv, then pytest tests/pkg
#   3. clang, Debug, -Werror, ASan + UBSan (LeakSanitizer on): build, then the
#      whole CTest suite again. interop_python runs here too: pytest only
#      starts the sanitized `sluice` CLI as a subprocess, so no sanitizer
#      runtime has to be preloaded into Python, and every corpus file goes
#      through the sanitized reader and writer. (SKIP_ASAN_INTEROP=1 leaves it
#      out.)
#   4. libFuzzer targets (clang, -DSLUICE_FUZZ=ON: fuzz/CMakeLists.txt builds
#      them with ASan + UBSan and a coverage-instrumented copy of the library),
#      each run for FUZZ_SECONDS seeded from the corpora and fuzz/corpus/<target>/;
#      reproducers of any failure are kept in build-fuzz/artifacts/
#
# Environment:
#   BUILD_ROOT     where build directories go (default: the repository root;
#                  uses build-gcc/, build-asan/, build-fuzz/ under it)
#   JOBS           parallel build/test jobs (default 2)
#   FUZZ_SECONDS   time per fuzz target (default 60)
#   SLUICE_CORPORA peer-written corpora (default ../shared/corpora)
#   PYTHON         Python interpreter (default python3)
#   CTEST_TIMEOUT  seconds before CTest kills one C test (default 600; x2 under ASan;
#                  interop_python, all of tests/py, has SLUICE_INTEROP_TIMEOUT: 1800, 3600)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_ROOT="${BUILD_ROOT:-$ROOT}"
JOBS="${JOBS:-2}"
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
PYTHON="${PYTHON:-python3}"
SLUICE_CORPORA="${SLUICE_CORPORA:-$(cd "$ROOT/.." && pwd)/shared/corpora}"
export SLUICE_CORPORA
cd "$ROOT"

GCC_DIR="$BUILD_ROOT/build-gcc"
ASAN_DIR="$BUILD_ROOT/build-asan"
FUZZ_DIR="$BUILD_ROOT/build-fuzz"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/sluice-test.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

SAN_ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1"
SAN_UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

passed=0
failed=0
report=()
START=$SECONDS

# step NAME CMD...: runs CMD, records pass/fail and the time it took.
step() {
  local name="$1"; shift
  local t0=$SECONDS rc
  printf '\n===== %s =====\n' "$name"
  "$@"
  rc=$?
  local dt=$((SECONDS - t0))
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1)); report+=("PASS  ${dt}s  $name")
  else
    failed=$((failed + 1)); report+=("FAIL  ${dt}s  $name (exit $rc)")
  fi
  return "$rc"
}

# skip NAME REASON: records a step that could not run because an earlier one failed.
skip_failed() {
  failed=$((failed + 1)); report+=("FAIL  0s  $1 (not run: $2)")
}

configure() {  # configure DIR CC BUILD_TYPE [extra cmake args...]
  local dir="$1" cc="$2" type="$3"; shift 3
  local gen=(-G Ninja)
  [ -f "$dir/CMakeCache.txt" ] && gen=()  # keep the generator it was made with
  # The one C++ file is built by the same compiler family (sanitizer and
  # fuzzer runtimes must match).
  local cxx=g++
  [ "$cc" = clang ] && cxx=clang++
  cmake -S "$ROOT" -B "$dir" "${gen[@]}" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
        -DCMAKE_BUILD_TYPE="$type" \
        -DSLUICE_WERROR=ON -DSLUICE_CORPORA="$SLUICE_CORPORA" \
        -DPython3_EXECUTABLE="$("$PYTHON" -c 'import sys; print(sys.executable)')" "$@"
}

build() { cmake --build "$1" -j "$JOBS"; }

# A hanging test is killed after CTEST_TIMEOUT seconds (doubled under ASan),
# so that a hang costs minutes, not CI's whole 90.
CTEST_TIMEOUT="${CTEST_TIMEOUT:-600}"

run_ctest() {  # run_ctest DIR TIMEOUT [ctest args...]
  local dir="$1" timeout="$2"; shift 2
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout "$timeout" "$@"
}

gcc_build() { configure "$GCC_DIR" gcc Release && build "$GCC_DIR"; }

asan_build() {
  configure "$ASAN_DIR" clang Debug -DSLUICE_SANITIZE=ON -DSLUICE_INTEROP_TIMEOUT=3600 &&
    build "$ASAN_DIR"
}

asan_ctest() {
  local args=()
  [ "${SKIP_ASAN_INTEROP:-0}" = 1 ] && args=(-E '^interop_python$')
  ASAN_OPTIONS="$SAN_ASAN_OPTIONS" UBSAN_OPTIONS="$SAN_UBSAN_OPTIONS" \
    run_ctest "$ASAN_DIR" "$((CTEST_TIMEOUT * 2))" "${args[@]}"
}

sample_job() {
  SLUICE_BIN="$GCC_DIR/sluice" SAMPLE_OUT="$TMP/sample" "$ROOT/scripts/setup.sh" --sample
}

fuzz_build() {
  # fuzz/CMakeLists.txt builds its own copy of the library with coverage
  # instrumentation and ASan + UBSan; only the fuzz targets are built here.
  # -O1 rather than Debug's -O0: fuzzing wants speed, asserts stay on.
  local targets=() f
  for f in "$ROOT"/fuzz/fuzz_*.c; do [ -e "$f" ] && targets+=("$(basename "$f" .c)"); done
  if [ "${#targets[@]}" -eq 0 ]; then echo "no fuzz/fuzz_*.c targets"; return 1; fi
  configure "$FUZZ_DIR" clang Debug -DSLUICE_FUZZ=ON -DSLUICE_BUILD_TESTS=OFF \
    -DCMAKE_C_FLAGS_DEBUG="-g -O1" && cmake --build "$FUZZ_DIR" -j "$JOBS" --target "${targets[@]}"
}

# Seeds for a fuzz target: its own fuzz/corpus/<target>/ if present, and the
# corpus files of its format (by the target's name: ipc, avro, csv, parquet).
fuzz_seeds() {
  local target="$1" seeds="$TMP/seeds-$1"
  mkdir -p "$seeds"
  if [ -d "$ROOT/fuzz/corpus/$target" ]; then cp -r "$ROOT/fuzz/corpus/$target/." "$seeds/"; fi
  case "$target" in
    *ipc*)
      local f i=0
      while IFS= read -r -d '' f; do
        cp "$f" "$seeds/seed-$i-$(basename "$f")"; i=$((i + 1))
      done < <(find "$SLUICE_CORPORA/arrow-testing/data/arrow-ipc-stream" \
                 \( -name '*.stream' -o -name '*.arrow_file' \) -print0)
      cp "$ROOT/scripts/sample/sample.arrow" "$seeds/"
      ;;
    *avro*)
      find "$SLUICE_CORPORA/arrow-testing/data/avro" -name '*.avro' -size -1024k -exec cp {} "$seeds/" \;
      ;;
    *csv*)
      find "$SLUICE_CORPORA/arrow-testing/data/csv" -maxdepth 1 -type f -name '*.csv' -size -1024k \
        -exec cp {} "$seeds/" \;
      # Compressed input takes its own path (inflated as it is read).
      local f
      for f in "$seeds"/*.csv; do
        [ -f "$f" ] || continue
        gzip -c "$f" > "$f.gz"
        if command -v zstd > /dev/null; then zstd -q -c "$f" > "$f.zst"; fi
      done
      ;;
    *dataset*)  # a few small files of every format: detection picks the reader
      cp "$ROOT/scripts/sample/sample.arrow" "$seeds/"
      find "$SLUICE_CORPORA/arrow-testing/data/avro" "$SLUICE_CORPORA/arrow-testing/data/csv" \
        "$SLUICE_CORPORA/parquet-testing/data" -maxdepth 1 -type f -size -64k \
        \( -name '*.avro' -o -name '*.csv' -o -name '*.parquet' \) -exec cp {} "$seeds/" \;
      ;;
    *parquet*)
      find "$SLUICE_CORPORA/parquet-testing/data" "$SLUICE_CORPORA/parquet-testing/bad_data" \
        -type f \( -name '*.parquet' -o -name '*.parquet.encrypted' \) -size -1024k \
        -exec cp {} "$seeds/" \;
      ;;
  esac
  echo "$seeds"
}

fuzz_run() {  # fuzz_run TARGET_PATH
  local exe="$1" name seeds work
  name="$(basename "$exe")"
  seeds="$(fuzz_seeds "$name")"
  work="$TMP/fuzz-$name"
  mkdir -p "$work/corpus"
  echo "fuzzing $name for ${FUZZ_SECONDS}s, $(find "$seeds" -type f | wc -l) seeds"
  ASAN_OPTIONS="$SAN_ASAN_OPTIONS" UBSAN_OPTIONS="$SAN_UBSAN_OPTIONS" \
    "$exe" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -close_fd_mask=1 -artifact_prefix="$work/" \
      "$work/corpus" "$seeds" 2>&1 | tail -n 40
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    mkdir -p "$FUZZ_DIR/artifacts"
    cp "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* "$FUZZ_DIR/artifacts/" 2>/dev/null
    echo "$name failed; reproducers copied to $FUZZ_DIR/artifacts/"
  fi
  return "$rc"
}

install_check() {
  rm -rf "$TMP/prefix" "$TMP/consumer"
  cmake --install "$GCC_DIR" --prefix "$TMP/prefix" &&
    CC=gcc "$ROOT/tests/install/check.sh" "$TMP/prefix" "$TMP/consumer"
}

# The Python package (pyproject.toml, scikit-build-core from requirements-dev)
# installed into a venv that sees the system's peers (pyarrow, polars, DuckDB,
# pandas), built with -Werror, then tests/pkg (SLUICE_BIN for the CLI's IPC).
python_package() {
  local venv="$TMP/pkg-venv"
  "$PYTHON" -m venv --system-site-packages "$venv" &&
    "$venv/bin/python" -m pip install -q --disable-pip-version-check \
      "$(grep '^scikit-build-core==' "$ROOT/requirements-dev.txt")" &&
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
      -C build-dir="$TMP/pkg-build" -C cmake.define.SLUICE_WERROR=ON "$ROOT" &&
    (cd "$TMP" && SLUICE_BIN="$GCC_DIR/sluice" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
      "$ROOT/tests/pkg")
}

# ---------------------------------------------------------------------------

if ! step "dependencies" "$ROOT/scripts/setup.sh" --deps; then
  echo "dependencies could not be installed; stopping"
  printf '\nsummary: %d passed, %d failed\n' "$passed" "$failed"
  exit 1
fi

if step "gcc Release -Werror: build" gcc_build; then
  step "gcc Release: ctest" run_ctest "$GCC_DIR" "$CTEST_TIMEOUT"
  step "sample job (gcc build)" sample_job
  step "install check (cmake find_package + pkg-config)" install_check
  step "Python package: pip install + pytest tests/pkg" python_package
else
  skip_failed "gcc Release: ctest" "build failed"
  skip_failed "sample job (gcc build)" "build failed"
  skip_failed "install check (cmake find_package + pkg-config)" "build failed"
  skip_failed "Python package: pip install + pytest tests/pkg" "build failed"
fi

if step "clang Debug ASan+UBSan -Werror: build" asan_build; then
  step "clang ASan+UBSan: ctest" asan_ctest
else
  skip_failed "clang ASan+UBSan: ctest" "build failed"
fi

if [ -f "$ROOT/fuzz/CMakeLists.txt" ]; then
  if step "libFuzzer targets: build" fuzz_build; then
    for src in "$ROOT"/fuzz/fuzz_*.c; do
      name="$(basename "$src" .c)"
      exe="$(find "$FUZZ_DIR" -type f -name "$name" -perm -u+x | head -n 1)"
      if [ -z "$exe" ]; then
        skip_failed "libFuzzer: $name" "no executable was built"
      else
        step "libFuzzer: $name ${FUZZ_SECONDS}s" fuzz_run "$exe"
      fi
    done
  else
    skip_failed "libFuzzer: run" "build failed"
  fi
else
  echo "fuzz/CMakeLists.txt does not exist yet: no fuzz targets to build"
fi

printf '\n===== results (%ds in all) =====\n' "$((SECONDS - START))"
printf '%s\n' "${report[@]}"
printf '\nsummary: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
