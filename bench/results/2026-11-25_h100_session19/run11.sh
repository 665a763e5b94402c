#!/bin/bash
# session 19, device call 11 (commit d7af75b's binaries and kernels): every
# sgemm config on shapes no tile divides, then the tf32 suite side by side.
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
timeout 170 .bundle/bin/gpu_tests --gtest_filter='*EverySgemmConfig*' > $OUT/gpu_tests_every_config.log 2>&1; echo "rc $?" >> $OUT/gpu_tests_every_config.log
grep -E "OK \]|FAILED|PASSED|rc " $OUT/gpu_tests_every_config.log | tail -5
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=${ST:-380} bash bench/suite.sh $OUT sgemm .bundle/shapes.txt --math tf32 --side-by-side > $OUT/suite_stdout.log 2>&1
rm -f $OUT/gpu0.db
tail -16 $OUT/suite_sgemm.log
