#!/bin/bash
# session 16, device call 7: gpu_tests (tensor-core subset), the probe (2048^3, 4096^3), the fp32_accurate suite on the 12 shapes (final code)
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
timeout 200 .bundle/bin/gpu_tests --gtest_filter='*TensorCoreConfigsMatch*:*WgmmaWithBeta*:*ModeBound*' > $OUT/gpu_tests.log 2>&1
echo "gpu_tests rc=$?" >> $OUT/gpu_tests.log
for s in "2048 2048 2048" "4096 4096 4096"; do timeout 60 .bundle/wgmma_rs_probe2 $s la0 >> $OUT/probe.txt 2>&1; done
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=380 bash bench/suite.sh $OUT sgemm .bundle/shapes.txt --math fp32_accurate > $OUT/suite_stdout.log 2>&1
rm -f $OUT/gpu0.db
