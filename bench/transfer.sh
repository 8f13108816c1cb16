#!/usr/bin/env bash
# transfer.sh — one command: what other GPUs' recordings of a kernel save when tuning it on
# another (tessera-tune strategies compare --replay FILE --prior OTHER ...), for every kernel in
# DATA_DIR recorded on two devices or more (files KERNEL_DEVICE.json[.gz]; default: the
# benchmark_hub recordings beside this checkout). Prints bench/transfer.py's tables.
#   bench/transfer.sh [DATA_DIR] [--seeds N] [--budget N] [--strategies model,evolutionary]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DATA=../shared/data/benchmark_hub_dev
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then DATA=$1; shift; fi
[ -d "$DATA" ] || { echo "transfer: no recordings at $DATA (give a directory of Kernel Tuner cache files)" >&2; exit 2; }
[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" >/dev/null
meson compile -C "$BUILD" tessera-tune >/dev/null
exec python3 bench/transfer.py --tt "$BUILD/tools/tessera-tune" --data "$DATA" "$@"
