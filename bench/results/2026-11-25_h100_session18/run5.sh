#!/bin/bash
# session 18, device call 5: split-K epilogue with 16-byte reductions (red.global.add.v4.f32) in LA=0: probe before (probe_prev) and after (wgmma_rs_probe2), interleaved per shape; all the gpu_tests; the fp32_accurate suite on the 12 shapes
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
for s in "128 4096 4096" "1000 1000 1000" "8192 128 8192" "16 4096 4096" "1024 1024 1024" "4096 4096 64"; do
  for v in probe_prev wgmma_rs_probe2; do
    echo "## $v $s" >> $OUT/probe.txt
    timeout 60 .bundle/$v $s 3xtf32_sk >> $OUT/probe.txt 2>&1
  done
done
timeout 200 .bundle/bin/gpu_tests > $OUT/gpu_tests.log 2>&1
echo "gpu_tests rc=$?" >> $OUT/gpu_tests.log
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=${ST:-380} bash bench/suite.sh $OUT sgemm .bundle/shapes.txt --math fp32_accurate > $OUT/suite_stdout.log 2>&1
rm -f $OUT/gpu0.db
