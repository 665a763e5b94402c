#!/bin/bash
# session 19, device call 3: the clock rule's GPU tests, then the
# fp32_accurate suite with --side-by-side (commit e6f8c36's binaries).
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
timeout 120 .bundle/bin/gpu_tests --gtest_filter='*Nvml*:*RetimeTogether*:*Judging*:*Timing*' > $OUT/gpu_tests_clock.log 2>&1; echo "rc $?" >> $OUT/gpu_tests_clock.log
tail -5 $OUT/gpu_tests_clock.log
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=${ST:-400} bash bench/suite.sh $OUT sgemm .bundle/shapes.txt --math fp32_accurate --side-by-side > $OUT/suite_stdout.log 2>&1
rm -f $OUT/gpu0.db
tail -16 $OUT/suite_sgemm.log
