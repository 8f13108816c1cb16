#!/usr/bin/env bash
# run-fuzz.sh — one short libFuzzer run of a harness, as CI does it: the committed seeds plus
# inputs nested past every depth limit (the recursion crashes this suite was written for),
# a fresh corpus directory for what the run finds, and any crash kept there and named.
#   run-fuzz.sh HARNESS SEED_DIR SECONDS
set -u
harness=$1
seeds=$2
seconds=$3
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
# Deep inputs: 20,000 parentheses, a 30,000-term sum, 100,000 unary minuses, JSON 100,000
# deep. Each must end in an error, not a stack overflow.
python3 - "$corpus" <<'PY'
import os, sys
d = sys.argv[1]
deep = {
    "deep-parens": "block(m=[64]).where(" + "(" * 20000 + "BM" + ")" * 20000 + " > 0)",
    "deep-sum": "block(m=[64]).where(" + "BM + " * 30000 + "BM > 0)",
    "deep-minus": "block(m=[64]).where(" + "-" * 100000 + "BM > 0)",
    "deep-json-array": "[" * 100000,
    "deep-json-object": '{"traceEvents": ' + '{"a": ' * 50000,
}
for name, text in deep.items():
    with open(os.path.join(d, name), "w") as f:
        f.write(text)
PY
"$harness" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=1048576 \
  -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 -artifact_prefix="$corpus/" \
  "$corpus" "$seeds" 2>&1 | tail -40
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  for f in "$corpus"/crash-* "$corpus"/timeout-* "$corpus"/oom-* "$corpus"/leak-*; do
    [ -e "$f" ] || continue
    echo "input that failed ($(basename "$f"), $(stat -c %s "$f") bytes), first 300 bytes:"
    head -c 300 "$f" | od -c | head -20
  done
fi
exit "$rc"
