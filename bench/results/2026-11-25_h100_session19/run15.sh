#!/bin/bash
# session 19, device call 14: LA=0 TF32 256x128 s4 (d7af75b) against a
# warp-specialized form (one producer warp, two consumer warpgroups, mbarriers).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
timeout 30 .bundle/probe_ws 2048 2048 2048 la0ws > $OUT/probe_ws_first.txt 2>&1; echo "rc $?" >> $OUT/probe_ws_first.txt
cat $OUT/probe_ws_first.txt
if grep -q "^la0ws" $OUT/probe_ws_first.txt; then
for sh in "2048 2048 2048" "4096 4096 4096" "8192 8192 8192" "4096 11008 4096"; do
  for r in 1 2; do
    echo "## run $r: $sh"
    timeout 60 .bundle/probe_ws $sh 256x128_s4_tf32 2>&1 | grep -v "^#  \|^# mc"
  done
done > $OUT/probe_ws.txt 2>&1
grep -E "^## |256x128_s4_tf32 " $OUT/probe_ws.txt
fi
