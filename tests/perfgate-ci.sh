#!/bin/sh
# perfgate-ci.sh — the project's own perf gate as CI runs it on the CPU: a baseline of
# bench/gate.suite recorded in this job, then a check of the same build against it (same
# machine, same build: it must pass), as a smoke test of the gate itself. The reports a CI
# system would publish (Markdown for the PR, JUnit XML) are left in OUT.
#   perfgate-ci.sh TESSERA-PERFGATE SUITE OUT
set -eu
gate=$1 suite=$2 out=$3
rm -rf "$out"
mkdir -p "$out"
"$gate" baseline --suite "$suite" --db "$out/gate.db" --label ci-smoke
"$gate" check --suite "$suite" --db "$out/gate.db" --label ci-smoke \
  --markdown "$out/report.md" --junit "$out/junit.xml"
echo "reports: $out/report.md $out/junit.xml"
