#!/bin/bash
# session 19, device call 13: LA=0 v2 (d7af75b) against B by 1-D bulk copies
# (warp 0, one row a lane, an mbarrier a stage), alternated.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
for sh in "2048 2048 2048" "4096 4096 4096" "8192 8192 8192" "4096 11008 4096"; do
  for r in 1 2; do
    for v in v2 bulkb; do
      echo "## $v run $r: $sh"
      timeout 60 .bundle/probe_$v $sh la0_ 2>&1 | grep -v "^#  \|^# mc"
    done
  done
done > $OUT/probe_bulkb.txt 2>&1
grep -E "^## |la0_256x128_s4_tf32|la0_128x128_s4_3xtf32_p2 |la0_128x128_s4_3xtf32_p2_bulkb" $OUT/probe_bulkb.txt
