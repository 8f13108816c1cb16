#!/usr/bin/env bash
# search_vs_kt.sh — one command: every recorded GPU space (default: the seven of
# ../shared/data/benchmark_hub_dev when this checkout sits beside it) replayed through every
# tessera strategy and through Kernel Tuner's strategies in simulation mode, same budget, same
# seeds; prints the table of bench/search_vs_kt.py. Kernel Tuner comes from PyPI into a venv
# under the build directory; where it cannot be installed the table has tessera's side only.
#   bench/search_vs_kt.sh [DATA_DIR_OR_FILE] [--seeds N] [--budget N] [--no-kt] ...
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DATA=../shared/data/benchmark_hub_dev
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then DATA=$1; shift; fi
[ -e "$DATA" ] || { echo "search_vs_kt: no recorded spaces at $DATA (give a directory of Kernel Tuner cache files)" >&2; exit 2; }
[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" >/dev/null
meson compile -C "$BUILD" tessera-tune >/dev/null
VENV=$BUILD/bench-venv
PY=python3
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import kernel_tuner' 2>/dev/null; then
  if python3 -m venv "$VENV" >/dev/null 2>&1 &&
     "$VENV/bin/pip" install -q 'kernel_tuner==1.5.0' >/dev/null 2>&1; then
    :
  else
    echo "# search_vs_kt: Kernel Tuner could not be installed from PyPI into $VENV" >&2
  fi
fi
"$VENV/bin/python" -c 'import kernel_tuner' 2>/dev/null && PY=$VENV/bin/python
exec "$PY" bench/search_vs_kt.py --tt "$BUILD/tools/tessera-tune" --data "$DATA" \
  --kt-cache "$BUILD/bench-kt-cache" "$@"
