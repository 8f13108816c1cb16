#!/bin/sh
# perfgate-ci.sh — the project's own perf gate as CI runs it on the CPU: a baseline of
# bench/gate.suite recorded in this job, then a check of the same build against it (same
# machine, same build: it must pass), as a smoke test of the gate itself. The reports a CI
# system would publish (Markdown for the PR, JUnit XML) are left in OUT.
#
# A check that finds a regression is run once more, and only a second regression fails. The two
# sides are the same binary loaded twice, yet on the shared 2-core VM CI runs on they were once
# judged 6% apart for a whole workload (an ASan build, softmax: 131 vs 140 µs, p < 1e-6 on
# three measurements within 20 s; the same check passed at +0.0% and +0.8% right after), an
# effect of where each copy sits and of the neighbours, not of the gate's statistics. A gate
# that is really broken fails the repeat too.
#   perfgate-ci.sh TESSERA-PERFGATE SUITE OUT
set -eu
gate=$1 suite=$2 out=$3
rm -rf "$out"
mkdir -p "$out"
"$gate" baseline --suite "$suite" --db "$out/gate.db" --label ci-smoke
check() {
  "$gate" check --suite "$suite" --db "$out/gate.db" --label ci-smoke --base baseline \
    --markdown "$out/report.md" --junit "$out/junit.xml"
}
rc=0
check || rc=$?
if [ "$rc" -eq 1 ]; then
  echo "perfgate-ci: the same build was judged a regression; checking once more"
  check
elif [ "$rc" -ne 0 ]; then
  exit "$rc"
fi
echo "reports: $out/report.md $out/junit.xml"
