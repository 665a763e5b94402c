#!/bin/bash
# session 16, device call 5: the fp32_accurate suite on the 12 shapes, the final code (call 4's bundle)
(cd .bundle && tar xJf payload.tar.xz && rm payload.tar.xz)
rm -rf .devdb; mkdir .devdb; xz -dc .bundle/cache.db.xz > .devdb/gpu0.db
TUNED_STRATEGY=exhaustive SUITE_TIMEOUT=400 bash bench/suite.sh $OUT sgemm .bundle/shapes.txt --math fp32_accurate > $OUT/suite_stdout.log 2>&1
rm -f $OUT/gpu0.db
