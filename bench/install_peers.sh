#!/bin/sh
# Installs the Python peers bench/ measures against (bench/requirements.txt).
# Also needs, from the system: a C compiler, GNU time at /usr/bin/time (Debian
# package `time`) for per-process peak RSS, and libzstd/liblz4 for load_arrow.
set -eu
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
"$PYTHON" -m pip install -r requirements.txt
[ -x /usr/bin/time ] || echo "warning: /usr/bin/time missing (apt-get install time); RSS falls back to wait4" >&2
