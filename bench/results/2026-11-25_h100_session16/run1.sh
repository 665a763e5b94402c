#!/bin/bash
# session 16, device call 1: gpu_tests (tensor-core subset), the probe, the fp32_accurate suite on 4 large shapes
set -x
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
nvidia-smi > $OUT/nvidia-smi.txt 2>&1
timeout 150 .bundle/bin/gpu_tests --gtest_filter='*TensorCoreConfigsMatch*:*WgmmaWithBeta*:*ModeBound*' > $OUT/gpu_tests.log 2>&1
echo "gpu_tests rc=$?" >> $OUT/gpu_tests.log
for s in "2048 2048 2048" "4096 4096 4096" "8192 8192 8192" "4096 11008 4096"; do
  timeout 60 .bundle/wgmma_rs_probe2 $s >> $OUT/probe.txt 2>&1
done
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=300 timeout 330 bash bench/suite.sh $OUT sgemm .bundle/large.txt --math fp32_accurate > $OUT/suite_stdout.log 2>&1
echo done
