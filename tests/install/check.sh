#!/usr/bin/env bash
# Checks an installed sluice the way a downstream project would use it.
#   tests/install/check.sh PREFIX WORKDIR
# PREFIX is where `cmake --install` put sluice; WORKDIR is scratch space.
# (a) CMake: find_package(sluice), linking sluice::sluice and sluice::sluice_static
# (b) pkg-config: cc main.c $(pkg-config --cflags --libs sluice), and --static
# (c) namespace: the shared library exports only sluice_*, and every global
#     symbol the static archive defines is sluice_* or sl_*, so that a program
#     linking libsluice.a beside avro-c (avro_*), libcsv (csv_*) or another
#     Parquet library cannot meet a clash (weak and unique symbols, such as
#     the header-only Dragonbox tables, merge rather than clash)
# Each consumer must run and print the version.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PREFIX="$(cd "$1" && pwd)"
WORK="$2"
CC="${CC:-cc}"
mkdir -p "$WORK"
want="sluice $(sed -n 's/^#define SLUICE_VERSION_STRING "\(.*\)"/\1/p' "$PREFIX/include/sluice.h")"
libdir="$(dirname "$(find "$PREFIX" -name 'sluice.pc' -path '*pkgconfig*' | head -n1)")/.."
libdir="$(cd "$libdir" && pwd)"
fail=0

run() {  # run NAME CMD...: the consumer must print "$want"
  local name="$1"; shift
  local got
  if got="$(LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@")" && [ "$got" = "$want" ]; then
    echo "install check: $name ok ($got)"
  else
    echo "install check: $name FAILED (output: '$got', wanted '$want')"; fail=1
  fi
}

echo "install check: CMake find_package(sluice) from $PREFIX"
cmake -S "$HERE" -B "$WORK/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$WORK/cmake"
run "cmake sluice::sluice" "$WORK/cmake/consumer_shared"
run "cmake sluice::sluice_static" "$WORK/cmake/consumer_static"
ldd "$WORK/cmake/consumer_static" > "$WORK/ldd.txt" || true
if grep -q libsluice "$WORK/ldd.txt"; then
  echo "install check: consumer_static links libsluice.so dynamically"; fail=1
fi

echo "install check: pkg-config from $libdir/pkgconfig"
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pc_includedir="$(pkg-config --variable=includedir sluice)"
pc_includedir_real="$(realpath -m "$pc_includedir")"
if [ "$pc_includedir_real" != "$PREFIX/include" ] || [ ! -f "$pc_includedir/sluice.h" ]; then
  # The .pc must point into the prefix it was installed to, including with
  # `cmake --install --prefix DIR` (a prefix chosen after configuring). A
  # prefix baked in at configure time breaks that; ${pcfiledir} does not.
  echo "install check: sluice.pc points at $pc_includedir, not into $PREFIX where it" \
       "was installed (a prefix baked in at configure time?)"
  fail=1
fi
# shellcheck disable=SC2046
if "$CC" -std=c11 -Wall -Werror "$HERE/main.c" -o "$WORK/pc_shared" $(pkg-config --cflags --libs sluice); then
  run "pkg-config shared" "$WORK/pc_shared"
else
  echo "install check: pkg-config shared FAILED to build"; fail=1
fi
# shellcheck disable=SC2046
if "$CC" -std=c11 -Wall -Werror "$HERE/main.c" -o "$WORK/pc_static" \
  $(pkg-config --cflags sluice) "$libdir/libsluice.a" $(pkg-config --static --libs-only-l sluice | sed 's/-lsluice//'); then
  run "pkg-config static" "$WORK/pc_static"
else
  echo "install check: pkg-config static FAILED to build"; fail=1
fi
echo "install check: exported symbols"
stray="$(nm -D --defined-only "$libdir/libsluice.so" | awk '{print $3}' | grep -v '^sluice_' || true)"
if [ -n "$stray" ]; then
  echo "install check: libsluice.so exports symbols outside sluice_*:" $stray; fail=1
fi
stray="$(nm -g --defined-only "$libdir/libsluice.a" | awk 'NF == 3 && $2 != "u" && $2 != "V" && $2 != "W" {print $3}' | grep -v -E '^(sluice_|sl_)' | sort -u || true)"
if [ -n "$stray" ]; then
  echo "install check: libsluice.a defines global symbols outside sluice_* and sl_*:" $stray; fail=1
fi
exit "$fail"
