#!/bin/bash
# session 20, device call 5 (branch la0-ws c6fa2eb: WS=1 with A by TMA): the
# tf32 suite side by side (the served kernel loaded through the client
# library in tunebench's own process, timed interleaved with cuBLAS TF32).
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=${ST:-420} bash bench/suite.sh $OUT sgemm .bundle/shapes.txt --math tf32 --side-by-side > $OUT/suite_stdout.log 2>&1
rm -f $OUT/gpu0.db
tail -16 $OUT/suite_sgemm.log
