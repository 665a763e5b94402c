# The public suite (ieee_fp32) side by side with cuBLAS after the tree was
# split (core/, families/, the split job runner and store), from a fresh
# database, on the device tool's nvidia-h100-x1; then the GPU tests in two
# parts; then the GPU tests on a GPU the worker cannot use (they fail, not skip).
# Bundle (TUNED_BUILD_BENCH=ON): tuned, tuned-worker, tunectl, tunebench, gpu_tests.
export LD_LIBRARY_PATH=$PWD/.bundle/lib:/usr/local/cuda/lib64
# call 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt
rm -rf .devdb
SUITE_TIMEOUT=420 bash bench/suite.sh $OUT sgemm .bundle/shapes.txt --side-by-side
timeout 150 .bundle/bin/gpu_tests --gtest_filter='-*EverySgemm*:*TensorCoreConfigs*' > $OUT/gpu_tests_part1.log 2>&1
# call 2
timeout 560 .bundle/bin/gpu_tests --gtest_filter='*EverySgemm*:*TensorCoreConfigs*' > $OUT/gpu_tests_part2.log 2>&1
# call 3
ls /proc/driver/nvidia/gpus/ /dev/nvidia0 > $OUT/unusable_gpu.log 2>&1
CUDA_VISIBLE_DEVICES="" timeout 60 .bundle/bin/gpu_tests --gtest_filter='*DescribesTheDevice*:*TimingIsPositive*' >> $OUT/unusable_gpu.log 2>&1
