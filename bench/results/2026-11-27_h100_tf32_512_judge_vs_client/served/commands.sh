cd .bundle && tar xJf lib.tar.xz && cd ..
rm -rf .devdb
export TUNED_STRATEGY=exhaustive
mkdir -p $OUT/s1; SUITE_TIMEOUT=200 bash bench/suite.sh $OUT/s1 sgemm .bundle/s512.txt --math tf32 --side-by-side
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64 PATH=$PWD/.bundle/bin:$PATH XDG_RUNTIME_DIR=$(mktemp -d)
K6=sgemm_wgmma_64x128x32_w64x64_s6_g1_b1_sk2_tf32_la0_tma_kc
K8=sgemm_wgmma_64x128x32_w64x64_s8_g1_b1_sk2_tf32_la0_tma_kc
L=$OUT/log.txt
tuned --gpu 0 --db .devdb/gpu0.db > $OUT/tuned2.log 2>&1 &
d=$!
for _ in $(seq 100); do [[ -S $XDG_RUNTIME_DIR/tuned/gpu0.sock ]] && break; sleep 0.2; done
for o in "" --fixed-order; do
  echo "== sbs_probe --served $o" >> $L
  sbs_probe --shape 512 512 512 --math tf32 --race --pairs 200 --client-flush --launch client --served $o --config $K6 --config $K8 2>&1 | grep -E "CLIENT_FLUSH|^RACE |served" >> $L
done
echo "== tunebench" >> $L
tunebench --family sgemm --shapes .bundle/s512.txt --math tf32 --side-by-side 2>&1 | grep -E "^512" >> $L
kill -TERM $d; wait $d
