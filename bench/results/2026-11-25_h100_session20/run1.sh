#!/bin/bash
# session 20, device call 1 (branch la0-ws, 927ddab + the probe's WS entries
# and PROBE_SUSTAIN): the space's warp-specialized LA=0 TF32 (WS=1) against
# LA=0 and the probe's la0ws; each kernel sustained 4 s at 8192^3 with
# nvidia-smi's clock and power; Nsight Compute on cuBLAS TF32 and WS at
# 8192^3; the GPU tests of the tensor-core kinds.
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
nvidia-smi > $OUT/smi.txt 2>&1
P=.bundle/probe_ws2
for sh in "2048 2048 2048" "4096 4096 4096" "8192 8192 8192" "4096 11008 4096"; do
  for r in 1 2; do
    echo "## run $r: $sh"
    timeout 60 $P $sh 256x128_s4_tf32 2>&1
  done
done > $OUT/probe_ab.txt 2>&1
grep -E "^## |^cuBLAS TF32|la0" $OUT/probe_ab.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active --format=csv -lms 100 > $OUT/smi_sustain.csv 2>&1 &
SMI=$!
PROBE_SUSTAIN=4 timeout 90 $P 8192 8192 8192 la0 > $OUT/sustain_8192.txt 2>&1
kill $SMI
grep sustain $OUT/sustain_8192.txt
NCU=/usr/local/cuda/bin/ncu
timeout 120 $NCU --clock-control none --set full -k regex:'gemm|xmma|cutlass' --launch-skip 2 --launch-count 2 $P 8192 8192 8192 nomatch > $OUT/ncu_cublas_8192.txt 2>&1
timeout 120 $NCU --clock-control none --set full -k regex:sgemm_wgmma --launch-count 1 $P 8192 8192 8192 la0_256x128_s4_tf32_ws > $OUT/ncu_ws_8192.txt 2>&1
grep -E "^  [a-zA-Z_].*\(|Duration|SM Frequency|Compute \(SM\) Throughput|Cluster|Registers Per|Shared Memory Config|Block Size|Grid Size|Tensor \(FP\)|Issue Slots|L2 Cache Throughput" $OUT/ncu_cublas_8192.txt $OUT/ncu_ws_8192.txt | head -80
timeout 240 .bundle/bin/gpu_tests --gtest_filter='*Wgmma*:*TensorCore*:*ModeBound*:*EverySgemmConfig*' > $OUT/gpu_tests.log 2>&1; echo "rc $?" >> $OUT/gpu_tests.log
grep -E "OK \]|FAILED|PASSED|rc " $OUT/gpu_tests.log | tail -12
