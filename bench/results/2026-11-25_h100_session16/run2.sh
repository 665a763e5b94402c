#!/bin/bash
# session 16, device call 2: the LA=0 variants (/tmp/var/gen.py) in the probe, 4 large shapes
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
for s in "2048 2048 2048" "4096 4096 4096" "8192 8192 8192" "4096 11008 4096"; do
  for v in wgmma_rs_probe2 probe_v1; do
    echo "## $v $s" >> $OUT/variants.txt
    timeout 90 .bundle/$v $s >> $OUT/variants.txt 2>&1
  done
  for v in probe_v2 probe_v3 probe_v4; do
    echo "## $v $s (filter 3xtf32)" >> $OUT/variants.txt
    timeout 90 .bundle/$v $s 3xtf32 >> $OUT/variants.txt 2>&1
  done
done
