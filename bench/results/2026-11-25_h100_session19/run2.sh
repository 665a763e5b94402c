#!/bin/bash
# session 19, device call 2: the multicast probe with diagnostics; NVML's
# clock event reasons sampled while the 8192^3 probe runs; ncu at 4096^3.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
P=.bundle/wgmma_rs_probe
F=la0_256x128_s4_tf32,la0_128x256_s4_tf32,mc,la0_128x128_s4_3xtf32
timeout 40 $P 2048 2048 2048 $F > $OUT/probe_2048.txt 2>&1; echo "rc $?" >> $OUT/probe_2048.txt
cat $OUT/probe_2048.txt
if grep -q "^mc" $OUT/probe_2048.txt; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown --format=csv -lms 100 > $OUT/smi_reasons_8192.csv 2>&1 &
  smi=$!
  timeout 60 $P 8192 8192 8192 $F > $OUT/probe_8192x8192x8192.txt 2>&1; echo "rc $?" >> $OUT/probe_8192x8192x8192.txt
  kill $smi
  for sh in "4096 4096 4096" "4096 11008 4096"; do
    timeout 40 $P $sh $F > $OUT/probe_${sh// /x}.txt 2>&1; echo "rc $?" >> $OUT/probe_${sh// /x}.txt
  done
  timeout 120 ncu --clock-control none --set full -k regex:"sgemm_wgmma|mc_runtime" -c 3 $P 4096 4096 4096 la0_256x128_s4_tf32,mc2_256x128_s4_tf32,mcrt2_256x128_s4_tf32 > $OUT/ncu_4096.txt 2>&1
fi
