#!/bin/sh
# Builds the C parts of the benchmark harness into bench/bin/.
#   bench/build.sh            memcpy_floor always; load_arrow when libsluice.a exists
# Env: CC (default cc), SLUICE_BUILD (default build/, the CMake build dir with
# libsluice.a and sluice.pc, whose Libs.private/Requires.private give the link
# flags), CFLAGS (default -O2).
set -eu
cd "$(dirname "$0")/.."
CC=${CC:-cc}
CFLAGS=${CFLAGS:--O2}
SLUICE_BUILD=${SLUICE_BUILD:-build}
WARN="-std=c11 -Wall -Wextra -Wpedantic"
mkdir -p bench/bin
$CC $CFLAGS $WARN -o bench/bin/memcpy_floor bench/memcpy_floor.c -lpthread
echo "built bench/bin/memcpy_floor"
# W2 peers: avro-c's generic reader (libavro-dev) and Java Avro's (the avro-tools
# jar that scripts/setup.sh fetches into .cache/avro-tools/, compiled with javac).
if [ -f /usr/include/avro.h ]; then
  $CC $CFLAGS $WARN -o bench/bin/avroc_read bench/avroc_read.c -lavro
  echo "built bench/bin/avroc_read"
else
  echo "skipped bench/bin/avroc_read: libavro-dev not installed" >&2
fi
AVRO_TOOLS_JAR=${AVRO_TOOLS_JAR:-$(ls .cache/avro-tools/avro-tools-*.jar 2>/dev/null | tail -n 1)}
if [ -n "$AVRO_TOOLS_JAR" ] && command -v javac >/dev/null 2>&1; then
  mkdir -p bench/bin/java
  javac -cp "$AVRO_TOOLS_JAR" -d bench/bin/java bench/java/AvroRead.java
  (cd "$(dirname "$AVRO_TOOLS_JAR")" && pwd | tr -d '\n' && echo "/$(basename "$AVRO_TOOLS_JAR")") \
    > bench/bin/java/avro-tools.path
  echo "built bench/bin/java/AvroRead.class (against $AVRO_TOOLS_JAR)"
else
  echo "skipped bench/bin/java: no avro-tools jar (scripts/setup.sh --deps) or no javac" >&2
fi
# libsluice.a's own dependencies (codecs, ...): from the sluice.pc the build
# generates, else the original set.
DEPS="-lzstd -llz4 -lpthread -lm"
if [ -f "$SLUICE_BUILD/sluice.pc" ] && command -v pkg-config >/dev/null 2>&1; then
  PC_DEPS=$(PKG_CONFIG_PATH="$SLUICE_BUILD" pkg-config --static --libs sluice 2>/dev/null |
            tr ' ' '\n' | grep -v -e '^-lsluice$' -e '^-L' | tr '\n' ' ') || PC_DEPS=""
  [ -n "$PC_DEPS" ] && DEPS="$PC_DEPS"
fi
if [ -f "$SLUICE_BUILD/libsluice.a" ]; then
  # shellcheck disable=SC2086 # DEPS is a list of flags
  if $CC $CFLAGS $WARN -Iinclude -o bench/bin/load_arrow.tmp bench/load_arrow.c \
      "$SLUICE_BUILD/libsluice.a" $DEPS; then
    mv bench/bin/load_arrow.tmp bench/bin/load_arrow
    # Which library the runner's numbers come from (bench/run.py records it).
    lib=$(cd "$SLUICE_BUILD" && pwd)/libsluice.a
    printf '{"libsluice": "%s", "libsluice_mtime": "%s", "built": "%s"}\n' "$lib" \
      "$(date -u -r "$lib" +%Y-%m-%dT%H:%M:%SZ)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
      > bench/bin/load_arrow.json
    echo "built bench/bin/load_arrow (against $SLUICE_BUILD/libsluice.a)"
  else
    rm -f bench/bin/load_arrow.tmp
    echo "could not link bench/bin/load_arrow against $SLUICE_BUILD/libsluice.a" \
         "(dataset API not there yet?)" >&2
    exit 1
  fi
else
  echo "skipped bench/bin/load_arrow: $SLUICE_BUILD/libsluice.a not found" >&2
fi
