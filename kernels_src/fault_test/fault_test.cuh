// Test-only kernels (family fault_test, families/fault_test/fault_test.cc): a
// vector op out[i] = 2 * in[i] + 1 over N floats, with configs that misbehave
// on purpose so the job system's fault handling can be tested for real.
//   BEHAVIOR 0 ok            reads in[i] WORK times (volatile), so WORK sets the speed
//            1 wrong answer  out[i] = 2 * in[i] + 2
//            2 device fault  stores through a null pointer (illegal address, sticky)
//            3 hang          spins forever (only killing the process stops it)
//            4 launch error  the family launches it with 2048 threads per block
//            5 compile error a static_assert fails
//            6 compile hang  a 2^23-times unrolled loop: NVRTC takes minutes
// Grid: ceil(N / BLOCK) blocks of BLOCK threads.

template <int BEHAVIOR, int WORK, int BLOCK>
__global__ void __launch_bounds__(BLOCK > 1024 ? 1024 : BLOCK)
    fault_test(int n, const float* in, float* out) {
  static_assert(BEHAVIOR != 5, "fault_test: compile error on purpose (BEHAVIOR 5)");
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const volatile float* vin = in;
  if constexpr (BEHAVIOR == 3) {
    // in[0] == in[0] for any non-NaN input: never ends, and the volatile
    // loads keep the compiler from removing the loop.
    while (vin[0] == vin[0]) {
    }
  }
  float v = 0.f;
  for (int w = 0; w < WORK; ++w) v = vin[i];
  if constexpr (BEHAVIOR == 6) {
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < (1 << 23); ++k) s += vin[(i + k) % n] * k;
    v += s * 0.f;
  }
  if constexpr (BEHAVIOR == 2) {
    reinterpret_cast<volatile float*>(0)[i] = v;
  }
  out[i] = 2.f * v + (BEHAVIOR == 1 ? 2.f : 1.f);
}
