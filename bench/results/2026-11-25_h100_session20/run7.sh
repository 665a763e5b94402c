#!/bin/bash
# session 20, device call 7 (main at the merge of la0-ws; binaries of
# c6fa2eb, whose kernels and launcher it has): the Python client end to end
# (bench/python_gpu.sh: test_gpu.py runs the tf32 kernel of 2048^3 with A's
# tensor map encoded by the Python launcher), then the gemv suite.
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
timeout 330 bash bench/python_gpu.sh $OUT > /dev/null 2>&1; echo "python_gpu rc $?"
grep -E "PASSED|FAILED|SKIPPED|passed|failed|error [0-9]|bytes past|python_gpu:" $OUT/python_gpu.log | tail -30
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
SUITE_TIMEOUT=200 bash bench/suite.sh $OUT sgemm bench/gemv_shapes.txt --gemv > $OUT/gemv_stdout.log 2>&1
rm -f $OUT/gpu0.db
tail -8 $OUT/suite_sgemm.log
