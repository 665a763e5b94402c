#!/bin/bash
# session 20, device call 9 (main b4dc1d2): the gemv suite under the default
# strategy (model) again, now that a shape whose space holds other kernel
# kinds than the tuned shapes' is swept exhaustively; then the probe after
# its refactor (one consumer for ws_tf32 and ws_tma) at 4096^3.
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
SUITE_TIMEOUT=240 bash bench/suite.sh $OUT sgemm bench/gemv_shapes.txt --gemv > $OUT/gemv_stdout.log 2>&1
rm -f $OUT/gpu0.db
tail -7 $OUT/suite_sgemm.log
grep -h "8192x4x8192" $OUT/tuned_sgemm.log | grep -o '"msg":"[^"]*' | head -3
timeout 60 .bundle/probe_r 4096 4096 4096 ws > $OUT/probe_refactor.txt 2>&1
grep -E "^cuBLAS TF32|ws_256x128_s4_tf32 |tmab|la0ws_256x128_s4_tf32 |la0_256x128_s4_tf32_ws " $OUT/probe_refactor.txt
