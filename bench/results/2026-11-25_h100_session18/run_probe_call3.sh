#!/bin/bash
# session 18 call 3: LA=0 3xTF32 with PROMOTE 2 and 4 (K tiles per fresh tensor-core partial sum) against 1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
P=.bundle/wgmma_rs_probe2
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
for s in "4096 4096 64" "512 512 512" "1024 1024 1024" "1000 1000 1000" "128 4096 4096" "8192 128 8192" "16 4096 4096" "2048 2048 2048" "4097 4097 4097" "8192 8192 64" "4096 4096 256"; do
  echo "== $s"; timeout 60 $P $s la0_128x128_s4_3xtf32 2>&1
done > $OUT/probe_small.txt
for s in "4096 4096 4096" "8192 8192 8192" "4096 11008 4096"; do
  echo "== $s"; timeout 90 $P $s la0_128x128_s4_3xtf32 2>&1
done > $OUT/probe_large.txt
