# The public suite (ieee_fp32) side by side with cuBLAS, on main at e110917
# (before the tree was split), from a fresh database, on the device tool's
# nvidia-h100-x1. Bundle: tuned, tuned-worker, tunectl, tunebench.
export LD_LIBRARY_PATH=$PWD/.bundle-before/lib:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt
rm -rf .devdb
BUNDLE=.bundle-before SUITE_TIMEOUT=560 bash bench/suite.sh $OUT sgemm .bundle-before/shapes.txt --side-by-side
