#!/bin/bash
# session 20, device call 8 (main 00dde46's code; binaries of c6fa2eb, the
# same kernels and launcher): the gemv suite with the exhaustive strategy
# (call 7 ran it with the default, model), then the fp32_accurate suite side
# by side.
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
mkdir -p $OUT/gemv $OUT/acc
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=200 bash bench/suite.sh $OUT/gemv sgemm bench/gemv_shapes.txt --gemv > $OUT/gemv/stdout.log 2>&1
tail -7 $OUT/gemv/suite_sgemm.log
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=340 bash bench/suite.sh $OUT/acc sgemm .bundle/shapes.txt --math fp32_accurate --side-by-side > $OUT/acc/stdout.log 2>&1
rm -f $OUT/gemv/gpu0.db $OUT/acc/gpu0.db
tail -16 $OUT/acc/suite_sgemm.log
