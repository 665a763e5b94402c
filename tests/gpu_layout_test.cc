// GPU tests of the sgemm kinds in the operand layouts other than NN
// (tuner.proto Layout: op(A) = A^T, op(B) = B^T), against cuBLAS or the fp64
// reference in the problem's layout, and their speed beside NN's. The
// fixture: gpu_test.h.
#include "tests/gpu_test.h"

namespace tuned {
namespace {

// The SIMT kinds (KIND 0-3) and the gemv kind in the layouts other than NN
// (op(A) = A^T, op(B) = B^T; NN's kernels are those the tests above run): a
// sample of each kind's configs (every naive and coalesced one, every
// third tiled one, every eighth warp one and each of its forms: split-K,
// sliced-K, stream-K, streamed B) verified by the worker against cuBLAS in
// the problem's layout on shapes no tile divides; every other gemv config
// on matrix-vector shapes (N or M of 1 to 8; K odd, the scalar path, and K
// % 4 == 0, the float4 path) and one with M, N > 8 (several chunks); then
// alpha 1.5, beta 0.5 against cuBLAS, aligned and a float off (A, B and C
// not 16-byte aligned: the 4-byte paths).
TEST_F(GpuTest, SimtAndGemvConfigsAreCorrectInEveryLayout) {
  const Family& f = GemmFamily();
  std::set<std::string> sample;  // NN names
  int tiled = 0, warp = 0, gemv = 0;
  std::set<std::string> forms;
  for (const Config& c : f.ValidSpace(worker_->device(), nullptr)) {
    const int64_t kind = c.at("KIND");
    bool take = kind <= 1 || (kind == 2 && tiled++ % 3 == 0) || (kind == 4 && gemv++ % 2 == 0);
    if (kind == 3) {
      const std::string form = absl::StrCat(c.at("SPLITK") > 1, c.at("SLICEK") > 1,
                                            c.at("STREAMK"), c.at("STREAMB"));
      take = warp++ % 8 == 0 || forms.insert(form).second;
    }
    if (take) sample.insert(f.ConfigName(c));
  }
  auto in_sample = [&](const Config& c) {
    return c.at("KIND") != 4 && sample.count(f.ConfigName(f.InLayout(c, v1::LAYOUT_NN))) > 0;
  };
  auto gemv_sample = [&](const Config& c) {
    return c.at("KIND") == 4 && sample.count(f.ConfigName(f.InLayout(c, v1::LAYOUT_NN))) > 0;
  };
  for (v1::Layout layout : {v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT}) {
    VerifyAll(f, {{17, 33, 65}, {1, 1, 1}, {1000, 1000, 1000}, {16, 515, 300}, {129, 64, 1}},
              in_sample, layout);
    VerifyAll(f,
              {{1, 1000, 1001}, {1000, 1, 1001}, {4, 777, 1024}, {777, 4, 1024}, {8, 300, 333},
               {300, 7, 332}, {1, 1, 1}, {2, 2, 4099}, {33, 65, 129}},
              gemv_sample, layout);
    // alpha and beta: the tiled kind's float4 path, the warp kind plain,
    // split-K and stream-K (C prescaled), the gemv sides with and without
    // split-K.
    std::vector<Config> configs(4), gemvs(4);
    for (const Config& c : f.ValidSpace(worker_->device(), nullptr, v1::MATH_IEEE_FP32, layout)) {
      const int64_t kind = c.at("KIND");
      if (kind == 2 && c.at("VEC") == 4 && c.at("DB") == 1) configs[0] = c;
      if (kind == 3 && c.at("SPLITK") == 1 && c.at("STREAMK") == 0 && c.at("BM") == 64) {
        configs[1] = c;
      }
      if (kind == 3 && c.at("SPLITK") == 8 && c.at("BM") == 32) configs[2] = c;
      if (kind == 3 && c.at("STREAMK") == 1 && c.at("BM") == 16) configs[3] = c;
      if (kind == 4 && c.at("GC") == 4) gemvs[2 * c.at("GSIDE") + (c.at("SPLITK") > 1)] = c;
    }
    for (size_t offset : {0, 1}) {
      ExpectMatchesCublasWithBeta(configs, 37, 131, 1029, 1.5f, 0.5f, offset, 1e-5, layout);
      for (auto [m, n, k] : {std::tuple{3, 1000, 1024}, {1000, 3, 1024}, {4, 4, 4099}}) {
        ExpectMatchesCublasWithBeta(gemvs, m, n, k, 1.5f, 0.5f, offset, 1e-5, layout);
      }
    }
  }
}

// op(B) = B^T (NT, torch's F.linear) costs the warp kind and the gemv kind
// little: the warp kind copies B's K-contiguous tile with 4-byte cp.async,
// transposed, as A's; gemv's rows side reads a float4 of each of B's N
// columns per k-quad. Each config's median in every layout, beside cuBLAS's
// in the same layout, on 4096^3 and 4096 x N x 4096 (N = 1, 4); NT within
// 1.5x of NN. (On an H100: the warp kind's best 2.85 ms NN, 3.25 NT, 2.77
// TN; gemv rows 0.029 ms NN and NT at N = 1, 0.030 NT at N = 4.)
TEST_F(GpuTest, LayoutsRunCloseToNn) {
  const Family& f = GemmFamily();
  std::vector<Config> warps, gemvs;
  for (const Config& c : f.ValidSpace(worker_->device(), nullptr)) {
    if (c.at("KIND") == 3 && c.at("BM") >= 128 && c.at("BN") >= 128 && c.at("BK") == 16 &&
        c.at("STAGES") == 4 && c.at("SPLITK") == 1 && c.at("STREAMK") == 0 &&
        c.at("GROUP") == 8 && c.at("RUL") == 5 && c.at("SLICEK") == 1 && c.at("MINB") == 1) {
      warps.push_back(c);
    }
    if (c.at("KIND") == 4 && c.at("GSIDE") == 0 && c.at("SPLITK") == 1 && c.at("GR") <= 2 &&
        c.at("GW") <= 8) {
      gemvs.push_back(c);
    }
  }
  ASSERT_FALSE(warps.empty());
  ASSERT_FALSE(gemvs.empty());
  for (const auto& [configs, shapes] :
       {std::pair{warps, std::vector<Shape>{{4096, 4096, 4096}}},
        std::pair{gemvs, std::vector<Shape>{{4096, 1, 4096}, {4096, 4, 4096}}}}) {
    for (const Shape& shape : shapes) {
      std::map<std::string, std::map<v1::Layout, double>> ms;
      for (v1::Layout layout : {v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT}) {
        auto prepared = PrepareResult(f, shape, v1::MATH_IEEE_FP32, layout);
        ASSERT_TRUE(prepared.ok()) << prepared.status();
        std::printf("%s %s: cuBLAS %.4f ms\n", Family::ShapeString(shape).c_str(),
                    EnumName(layout).c_str(), prepared->baseline_ms());
        for (const Config& nn : configs) {
          if (!f.SuitsShape(nn, shape).ok()) continue;
          const Config c = f.InLayout(nn, layout);
          if (!f.Check(c, worker_->device()).ok()) continue;
          const KernelSource src = f.Source(c);
          auto k = Compile(SourceText(src), src.name_expression, src.options, "sm_90");
          ASSERT_TRUE(k.ok()) << k.status();
          auto r = worker_->MeasureCompiled(*k, f.Geometry(c, shape, worker_->device()), 0);
          ASSERT_EQ(r.status(), v1::MEASUREMENT_OK) << f.ConfigName(c) << ": " << r.message();
          ms[f.ConfigName(nn)][layout] = r.median_ms();
        }
      }
      for (const auto& [name, by_layout] : ms) {
        std::printf("%s %s: NN %.4f NT %.4f TN %.4f TT %.4f ms\n",
                    Family::ShapeString(shape).c_str(), name.c_str(), by_layout.at(v1::LAYOUT_NN),
                    by_layout.at(v1::LAYOUT_NT),
                    by_layout.count(v1::LAYOUT_TN) ? by_layout.at(v1::LAYOUT_TN) : 0.0,
                    by_layout.count(v1::LAYOUT_TT) ? by_layout.at(v1::LAYOUT_TT) : 0.0);
        EXPECT_LT(by_layout.at(v1::LAYOUT_NT), 1.5 * by_layout.at(v1::LAYOUT_NN)) << name;
      }
    }
  }
}

// The tensor-core kinds in every layout (tuner.proto Layout; LAYOUT, the
// kernels' last template argument): a representative subset (KIND 5 big,
// split-K and 3xTF32 tiles; KIND 6 LA 1 and 2 TF32 and 3xTF32, split-K,
// and, but in TN, LA 0 (PROMOTE 1, 2; in NT TF32 only) and WS) on odd
// shapes against the fp64 reference of the problem's layout: 3xTF32
// within 1e-5, TF32 within 2e-3, and within the mode's bound (2x cuBLAS
// TF32's error) where the existing NN test expects it (K >= 1000).
TEST_F(GpuTest, TensorCoreConfigsMatchFp64ReferenceInEveryLayout) {
  const Family& f = GemmFamily();
  const std::vector<Shape> shapes = {{1, 1, 1},       {7, 13, 5},     {129, 65, 300},
                                     {257, 96, 1001}, {1000, 1000, 1000}, {300, 264, 512},
                                     {130, 1, 17},    {1, 200, 33}};
  const bool hopper = worker_->device().cc_major() == 9 && worker_->device().cc_minor() == 0;
  auto is = [](const Config& c, std::initializer_list<std::pair<const char*, int64_t>> want) {
    for (const auto& [k, v] : want) {
      const auto at = c.find(k);
      if ((at == c.end() ? (std::string(k) == "LA" ? 1 : 0) : at->second) != v) return false;
    }
    return true;
  };
  auto which = [&](const Config& c) {
    if (c.at("KIND") == 5) {
      return is(c, {{"BM", 128}, {"BN", 128}, {"BK", 32}, {"WM", 64}, {"WN", 64}, {"PASSES", 1}}) ||
             is(c, {{"BM", 32}, {"BN", 128}, {"BK", 32}, {"SPLITK", 4}, {"PASSES", 3}}) ||
             is(c, {{"BM", 128}, {"BN", 128}, {"BK", 16}, {"WN", 32}, {"STAGES", 4},
                    {"PASSES", 3}});
    }
    if (c.at("KIND") != 6) return false;
    return is(c, {{"LA", 0}, {"SPLITK", 1}}) || is(c, {{"LA", 0}, {"SPLITK", 4}}) ||
           is(c, {{"LA", 1}, {"BM", 128}, {"BN", 128}, {"BK", 32}, {"STAGES", 3},
                  {"SPLITK", 1}, {"PASSES", 3}}) ||
           is(c, {{"LA", 1}, {"BM", 128}, {"BN", 128}, {"BK", 32}, {"STAGES", 4}, {"GROUP", 8},
                  {"SPLITK", 1}, {"PASSES", 1}}) ||
           is(c, {{"LA", 1}, {"BM", 64}, {"BN", 128}, {"SPLITK", 4}, {"PASSES", 1}}) ||
           is(c, {{"LA", 2}, {"BM", 256}, {"BN", 128}, {"WM", 64}, {"STAGES", 4}}) ||
           is(c, {{"LA", 2}, {"BM", 128}, {"BN", 128}, {"BK", 16}, {"STAGES", 4},
                  {"PASSES", 3}});
  };
  for (v1::Layout layout : {v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT}) {
    const auto kernels = CompileAll(f, worker_->device(), v1::MATH_TF32, which, layout);
    ASSERT_FALSE(kernels.empty());
    int la0 = 0, wgmma = 0;
    for (const auto& [config, kernel] : kernels) {
      wgmma += config.at("KIND") == 6;
      la0 += config.at("KIND") == 6 && config.contains("LA") && config.at("LA") == 0;
    }
    if (hopper) {
      EXPECT_GE(wgmma, 5) << EnumName(layout);
      // LA=0 and WS take NN, NT and TT (wgmma.cc).
      EXPECT_EQ(la0 > 0, layout != v1::LAYOUT_TN) << EnumName(layout);
    }
    for (const auto& shape : shapes) {
      auto prepared = PrepareResult(f, shape, v1::MATH_TF32, layout);
      ASSERT_TRUE(prepared.ok()) << Family::ShapeString(shape) << ": " << prepared.status();
      const bool large_k = shape[2] >= 1000;
      const bool aligned = shape[1] % 4 == 0 && shape[2] % 4 == 0;
      int ok = 0;
      double worst3 = 0, worst1 = 0;
      for (const auto& [config, kernel] : kernels) {
        const std::string what =
            f.ConfigName(config) + " on " + Family::ShapeString(shape) + " " + EnumName(layout);
        auto r = worker_->MeasureCompiled(kernel, f.Geometry(config, shape, worker_->device()), 0,
                                          /*time=*/false);
        ASSERT_FALSE(worker_->broken()) << what;
        ASSERT_TRUE(r.status() == v1::MEASUREMENT_OK || r.status() == v1::MEASUREMENT_WRONG_ANSWER)
            << what << ": " << v1::MeasurementStatus_Name(r.status()) << " " << r.message();
        const bool three = config.at("PASSES") == 3;
        EXPECT_LT(r.error(), three ? 1e-5 : 2e-3) << what;
        if (large_k && (three || aligned)) {
          EXPECT_EQ(r.status(), v1::MEASUREMENT_OK)
              << what << ": error " << r.error() << ", bound " << prepared->tolerance();
        }
        ok += r.status() == v1::MEASUREMENT_OK;
        (three ? worst3 : worst1) = std::max(three ? worst3 : worst1, r.error());
      }
      std::cout << EnumName(layout) << " " << Family::ShapeString(shape) << ": " << ok << "/"
                << kernels.size() << " tensor-core configs within the bound "
                << prepared->tolerance() << "; worst 3xTF32 " << worst3 << ", worst TF32 "
                << worst1 << "\n";
    }
  }
}

// The tensor-core kinds' client-style launch (alpha, beta, C read) in the
// layouts other than NN, against cuBLAS fp32 in the same layout: 3xTF32
// KIND 5, KIND 6 LA 1 and (TT) LA 0 within 1e-5; in NT and TT, TF32 LA 0
// and WS within 2e-3 (TF32 rounds the operands); one shape with A, B and C
// a float off (4-byte paths, WS without a tensor map), one with LA 0's
// full and partial blocks.
TEST_F(GpuTest, TensorCoreLayoutsWithBetaMatchCublas) {
  const Family& f = GemmFamily();
  const bool hopper = worker_->device().cc_major() == 9 && worker_->device().cc_minor() == 0;
  for (v1::Layout layout : {v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT}) {
    std::vector<Config> configs(3), tf32(2);  // KIND 5, 6 LA 1 and 0 (TT); LA 0 and WS
    for (const auto& c : f.ValidSpace(worker_->device(), nullptr, v1::MATH_TF32, layout)) {
      if (c.at("KIND") == 5 && c.at("PASSES") == 3 && c.at("SPLITK") == 1 && configs[0].empty()) {
        configs[0] = c;
      }
      if (!hopper || c.at("KIND") != 6 || c.at("SPLITK") != 1) continue;
      if (c.contains("LA") && c.at("LA") == 0) {
        if (c.at("BM") != 128 || c.at("STAGES") != 4 || c.contains("PROMOTE")) continue;
        if (c.at("PASSES") == 3) {
          configs[2] = c;
        } else {
          tf32[c.contains("WS") ? 1 : 0] = c;
        }
      } else if (c.at("PASSES") == 3 && !c.contains("LA") && c.at("BK") == 32 &&
                 c.at("BN") == 128 && configs[1].empty()) {
        configs[1] = c;
      }
    }
    ASSERT_FALSE(configs[0].empty()) << EnumName(layout);
    ASSERT_EQ(configs[2].empty(), !hopper || layout != v1::LAYOUT_TT) << EnumName(layout);
    if (configs[2].empty()) configs.pop_back();
    if (!hopper) configs.pop_back();
    ExpectMatchesCublasWithBeta(configs, 131, 67, 300, -1.0f, 2.0f, 1, 1e-5, layout);
    ExpectMatchesCublasWithBeta(configs, 300, 264, 512, 1.5f, 0.5f, 0, 1e-5, layout);
    if (hopper && layout != v1::LAYOUT_TN) {
      ASSERT_FALSE(tf32[0].empty() || tf32[1].empty());
      ExpectMatchesCublasWithBeta(tf32, 300, 264, 512, 1.5f, 0.5f, 0, 2e-3, layout);
      ExpectMatchesCublasWithBeta(tf32, 1000, 130, 300, -1.0f, 2.0f, 1, 2e-3, layout);
    }
  }
}

// The tensor-core kinds' speed per layout at 4096^3 (MATH_TF32): the
// median times of a few of the NN space's fast configs (KIND 5 TF32, KIND 6
// LA 1 and 2 TF32 and 3xTF32, LA 0 TF32 and 3xTF32, WS) in each layout
// where Check admits them, beside cuBLAS TF32's in that layout. NT
// (F.linear's layout, both operands K-major) keeps most of NN's speed: its
// best KIND 6 TF32 config within 0.7x of NN's (printed; a loose bound).
TEST_F(GpuTest, TensorCoreLayoutTimes) {
  const Family& f = GemmFamily();
  if (worker_->device().cc_major() != 9 || worker_->device().cc_minor() != 0) {
    GTEST_SKIP() << "KIND 6 (wgmma) needs compute capability 9.0";
  }
  const Shape shape = {4096, 4096, 4096};
  auto which = [](const Config& c) {
    auto at = [&](const char* k, int64_t absent) {
      return c.contains(k) ? c.at(k) : absent;
    };
    if (c.at("SPLITK") != 1) return false;
    if (c.at("KIND") == 5) {
      return c.at("BM") == 128 && c.at("BN") == 128 && c.at("BK") == 32 && c.at("PASSES") == 1 &&
             c.at("WM") == 64 && c.at("WN") == 64;
    }
    if (c.at("KIND") != 6) return false;
    const int64_t la = at("LA", 1);
    if (la == 0) return c.at("STAGES") == 4 && at("PROMOTE", 1) == 1;  // TF32, 3xTF32, WS
    if (la == 2) return c.at("BM") == 256 && c.at("WM") == 64 && c.at("STAGES") == 4;
    return c.at("BM") == 128 && c.at("BN") == 128 && c.at("BK") == 32 && c.at("GROUP") == 8 &&
           (c.at("PASSES") == 1 ? c.at("STAGES") == 4 : c.at("STAGES") == 3);
  };
  std::map<v1::Layout, double> best_wgmma_tf32;
  for (v1::Layout layout : {v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT}) {
    const auto kernels = CompileAll(f, worker_->device(), v1::MATH_TF32, which, layout);
    ASSERT_FALSE(kernels.empty());
    auto prepared = PrepareResult(f, shape, v1::MATH_TF32, layout);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    const double flops = 2.0 * 4096 * 4096 * 4096;
    std::printf("%s cuBLAS TF32: %.3f ms, %.1f TFLOPS\n", EnumName(layout).c_str(),
                prepared->baseline_ms(), flops / (prepared->baseline_ms() * 1e9));
    double best = 0;
    for (const auto& [config, kernel] : kernels) {
      auto r = worker_->MeasureCompiled(kernel, f.Geometry(config, shape, worker_->device()), 0);
      ASSERT_FALSE(worker_->broken()) << f.ConfigName(config);
      ASSERT_EQ(r.status(), v1::MEASUREMENT_OK) << f.ConfigName(config) << ": " << r.message();
      std::printf("%s %s: %.3f ms, %.1f TFLOPS, error %.1e\n", EnumName(layout).c_str(),
                  f.ConfigName(config).c_str(), r.median_ms(), flops / (r.median_ms() * 1e9),
                  r.error());
      if (config.at("KIND") == 6 && config.at("PASSES") == 1) {
        best = std::max(best, flops / (r.median_ms() * 1e9));
      }
    }
    best_wgmma_tf32[layout] = best;
  }
  EXPECT_GT(best_wgmma_tf32[v1::LAYOUT_NT], 0.7 * best_wgmma_tf32[v1::LAYOUT_NN]);
}

}  // namespace
}  // namespace tuned
