#!/bin/bash
# session 18, device call 4: gpu_tests (tensor-core subset), the fp32_accurate suite on the 12 shapes (K loop copying STAGES - 1 ahead, PROMOTE 1/2)
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
timeout 200 .bundle/bin/gpu_tests --gtest_filter='*TensorCoreConfigsMatch*:*WgmmaWithBeta*:*ModeBound*' > $OUT/gpu_tests.log 2>&1
echo "gpu_tests rc=$?" >> $OUT/gpu_tests.log
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=${ST:-380} bash bench/suite.sh $OUT sgemm .bundle/shapes.txt --math fp32_accurate > $OUT/suite_stdout.log 2>&1
rm -f $OUT/gpu0.db
