#!/bin/bash
# session 19, device call 10 (commit d7af75b's binaries and kernels): the GPU
# tests but the all-configs one, then the fp32_accurate suite side by side.
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
timeout 150 .bundle/bin/gpu_tests --gtest_filter='-*EverySgemmConfig*' > $OUT/gpu_tests.log 2>&1; echo "rc $?" >> $OUT/gpu_tests.log
grep -E "OK \]|FAILED|PASSED|rc " $OUT/gpu_tests.log | tail -22
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=${ST:-380} bash bench/suite.sh $OUT sgemm .bundle/shapes.txt --math fp32_accurate --side-by-side > $OUT/suite_stdout.log 2>&1
rm -f $OUT/gpu0.db
tail -16 $OUT/suite_sgemm.log
