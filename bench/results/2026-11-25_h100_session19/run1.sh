#!/bin/bash
# session 19, device call 1: (1) the multicast probe (sgemm_wgmma_mc beside
# LA=0 and cuBLAS), (2) ncu of the TF32 kernels at 4096^3, (3) the
# fp32_accurate suite with --side-by-side (HEAD af64349's binaries).
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/smi_start.txt 2>&1
P=.bundle/wgmma_rs_probe
F=la0_256x128_s4_tf32,la0_128x256_s4_tf32,mc,la0_128x128_s4_3xtf32
timeout 30 $P 2048 2048 2048 $F > $OUT/probe_2048.txt 2>&1; echo "rc $?" >> $OUT/probe_2048.txt
if grep -q "^mc2_256x128_s4_tf32 " $OUT/probe_2048.txt; then
  for sh in "4096 4096 4096" "8192 8192 8192" "4096 11008 4096"; do
    timeout 40 $P $sh $F > $OUT/probe_${sh// /x}.txt 2>&1; echo "rc $?" >> $OUT/probe_${sh// /x}.txt
  done
  timeout 100 ncu --clock-control none --set full -k regex:sgemm_wgmma -c 2 $P 4096 4096 4096 la0_256x128_s4_tf32,mc2_256x128_s4_tf32 > $OUT/ncu_4096.txt 2>&1
fi
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=${ST:-360} bash bench/suite.sh $OUT sgemm .bundle/shapes.txt --math fp32_accurate --side-by-side > $OUT/suite_stdout.log 2>&1
rm -f $OUT/gpu0.db
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/smi_end.txt 2>&1
