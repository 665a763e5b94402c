# sbs_probe (bench/sbs_probe.cc) at 512^3 TF32, one process each, on one H100:
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64; P=.bundle/bin/sbs_probe
KC=sgemm_wgmma_64x128x32_w64x64_s6_g1_b1_sk2_tf32_la0_tma_kc
NC=sgemm_wgmma_64x128x32_w64x64_s6_g1_b1_tf32_la0_tma
NS=sgemm_wgmma_64x128x32_w64x64_s6_g1_b1_sk2_tf32_la0_tma
nvidia-smi -L > $OUT/1.txt
$P --shape 512 512 512 --math tf32 --race --judge 3 --pairs 200 --client-flush --config $KC --config $NC --config $NS >> $OUT/1.txt 2>&1
for o in "" --fixed-order; do $P --shape 512 512 512 --math tf32 --race --judge 2 --pairs 200 --client-flush --launch client $o --config $KC; done > $OUT/2.txt 2>&1
$P --shape 512 512 512 --math tf32 --race --pairs 200 --client-flush --launch both --placements 2 --config $KC > $OUT/3.txt 2>&1
$P --shape 512 512 512 --math tf32 --race --pairs 200 --client-flush --legacy-stream --launch client --config $KC > $OUT/4.txt 2>&1
$P --shape 512 512 512 --math tf32 --pairs 200 --config $KC --config $NC > $OUT/5.txt 2>&1
