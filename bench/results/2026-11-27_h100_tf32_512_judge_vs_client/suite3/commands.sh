cd .bundle && tar xJf lib.tar.xz && cd ..
rm -rf .devdb
export TUNED_STRATEGY=exhaustive
for i in 1 2 3; do mkdir -p $OUT/s$i; SUITE_TIMEOUT=200 bash bench/suite.sh $OUT/s$i sgemm .bundle/s512.txt --math tf32 --side-by-side; done
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64; P=.bundle/bin/sbs_probe
KC=sgemm_wgmma_64x128x32_w64x64_s6_g1_b1_sk2_tf32_la0_tma_kc
$P --shape 512 512 512 --math tf32 --race --pairs 200 --client-flush --launch client --config $KC > $OUT/sbs_after.txt 2>&1
