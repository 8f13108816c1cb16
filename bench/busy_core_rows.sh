#!/bin/bash
# bench/busy_core_rows.sh — do two-thread row kernels survive a busy core? softmax 4096^2 f32
# with 2 threads and 1, on an idle machine and with core 1 held by a spinning process (what a
# neighbour on a shared VM does). With a static split the thread on the busy core holds the
# whole kernel back below the one-thread rate; rows handed out dynamically go to the free core.
# Needs taskset (util-linux). Run from the repository root after a build.
cd "$(dirname "$0")/.."
run() { build/tools/tessera-tune run softmax_safe --backend cpu --shape M=4096,N=4096 --dtype f32 --schedule "block(m=4).vector(16).threads($1).softmax(\"stored\")" 2>&1 | grep -E '^time' | sed "s/^/threads($1) $2: /"; }
for i in 1 2; do
run 2 idle; run 1 idle
taskset -c 1 sh -c 'while :; do :; done' & B=$!; sleep 0.3
run 2 busy; run 1 busy
kill $B; wait $B 2>/dev/null
done
