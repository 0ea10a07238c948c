#!/bin/sh
# Installs the Python peers bench/ measures against (bench/requirements.txt),
# and DSBulk's jars (bench/dsbulk/pom.xml, into .cache/dsbulk/lib) when Maven
# is there: the W4 Cassandra peer beside the Python driver.
# Also needs, from the system: a C compiler, GNU time at /usr/bin/time (Debian
# package `time`) for per-process peak RSS, and libzstd/liblz4 for load_arrow.
set -eu
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
"$PYTHON" -m pip install -r requirements.txt
[ -x /usr/bin/time ] || echo "warning: /usr/bin/time missing (apt-get install time); RSS falls back to wait4" >&2
if command -v mvn >/dev/null 2>&1; then
  mvn -q -B -f dsbulk/pom.xml dependency:copy-dependencies -DoutputDirectory="$(cd .. && pwd)/.cache/dsbulk/lib"
else
  echo "warning: mvn missing: the W4 Cassandra tasks run without the DSBulk peer" >&2
fi
