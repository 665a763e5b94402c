#!/bin/bash
# session 16, device call 4: gpu_tests (tensor-core subset), the epilogue (probe_prev: row-scattered stores, wgmma_rs_probe2: through shared memory), the tf32 suite on the 12 shapes
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
timeout 200 .bundle/bin/gpu_tests --gtest_filter='*TensorCoreConfigsMatch*:*WgmmaWithBeta*:*ModeBound*' > $OUT/gpu_tests.log 2>&1
echo "gpu_tests rc=$?" >> $OUT/gpu_tests.log
for s in "2048 2048 2048" "4096 4096 4096" "8192 8192 8192"; do
  for v in probe_prev wgmma_rs_probe2; do
    echo "## $v $s" >> $OUT/probe.txt
    timeout 60 .bundle/$v $s la0 >> $OUT/probe.txt 2>&1
  done
done
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=${ST:-300} bash bench/suite.sh $OUT sgemm .bundle/shapes.txt --math tf32 > $OUT/suite_stdout.log 2>&1
rm -f $OUT/gpu0.db
