#!/bin/bash
# session 16, device call 6: every measurement of 5 shapes under fp32_accurate (DUMP_RESULTS)
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
DUMP_RESULTS=1 MATH=fp32_accurate TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=300 bash bench/suite.sh $OUT sgemm .bundle/mid.txt --math fp32_accurate > $OUT/suite_stdout.log 2>&1
rm -f $OUT/gpu0.db
