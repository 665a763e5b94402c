// Unit tests of the transpose family: a kernel spec shipped with the daemon
// (families/transpose/spec.toml), CPU only.
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "families/family.h"
#include "families/kernel_text.h"
#include "families/spec/spec.h"

namespace tuned {
namespace {

const Family& F() { return TransposeFamily(); }

Config Cfg(int64_t kind, int64_t tile, int64_t by, int64_t pad) {
  return {{"KIND", kind}, {"TILE", tile}, {"BY", by}, {"PAD", pad}};
}

std::vector<uint32_t> Grid(const v1::LaunchGeometry& g) { return {g.grid().begin(), g.grid().end()}; }
std::vector<uint32_t> Block(const v1::LaunchGeometry& g) {
  return {g.block().begin(), g.block().end()};
}

// Expects FAILED_PRECONDITION whose message contains `reason`.
void ExpectRejected(const Config& c, const v1::Device& d, const std::string& reason) {
  const absl::Status s = F().Check(c, d);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << F().ConfigKey(c) << ": " << s;
  EXPECT_NE(s.message().find(reason), std::string::npos)
      << F().ConfigKey(c) << ": '" << s.message() << "' lacks '" << reason << "'";
}

TEST(TransposeFamilyTest, Description) {
  EXPECT_EQ(F().id(), v1::FAMILY_TRANSPOSE);
  EXPECT_EQ(F().name(), "transpose");
  EXPECT_EQ(F().dims(), (std::vector<std::string>{"ROWS", "COLS"}));
  EXPECT_EQ(F().metric_unit(), "GB/s");
  EXPECT_EQ(F().baseline_name(), "default config transpose_tiled_32x8_p1");
  EXPECT_TRUE(F().baseline_is_candidate());
  ASSERT_NE(F().spec(), nullptr);
  EXPECT_EQ(F().Arguments(),
            (std::vector<std::string>{"int rows", "int cols", "const float* in", "float* out"}));
  std::vector<std::string> names;
  for (const auto& p : F().params()) {
    names.push_back(p.name);
    EXPECT_FALSE(p.doc.empty()) << p.name;
    EXPECT_FALSE(p.values.empty()) << p.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"KIND", "TILE", "BY", "PAD"}));
}

TEST(TransposeFamilyTest, FindFamily) {
  EXPECT_EQ(FindFamily("transpose"), &F());
  EXPECT_EQ(FindFamily(v1::FAMILY_TRANSPOSE), &F());
}

// The spec the daemon ships is a valid spec once its kernel file is joined
// in: its kernel and the __global__ functions it names are in the text.
TEST(TransposeFamilyTest, ShippedSpecIsValidWithItsSource) {
  auto spec = SpecWithSource(F());
  ASSERT_TRUE(spec.has_value());
  EXPECT_NE(spec->source().find("transpose(int rows"), std::string::npos);
  EXPECT_TRUE(spec::ValidateSpec(*spec).ok()) << spec::ValidateSpec(*spec);
  EXPECT_EQ(spec->name(), "transpose");
}

TEST(TransposeFamilyTest, WorkAndBuffers) {
  EXPECT_DOUBLE_EQ(F().Work({8192, 8192}), 2.0 * 4 * 8192 * 8192);
  EXPECT_DOUBLE_EQ(F().Work({8191, 4097}), 2.0 * 4 * 8191 * 4097);
  EXPECT_DOUBLE_EQ(F().Work({1, 1}), 8.0);
  // in, out and out's initial fill (the worker restores it before each
  // verification); the baseline is a config of the kernel, with no buffer of its own.
  EXPECT_EQ(F().BufferBytes({8192, 8192}, v1::MATH_IEEE_FP32), int64_t{3} * 4 * 8192 * 8192);
  EXPECT_EQ(F().BufferBytes({1, 5000}, v1::MATH_IEEE_FP32), 3 * 4 * 5000);
  EXPECT_EQ(F().MaxBufferElements({8191, 4097}), int64_t{8191} * 4097);
}

TEST(TransposeFamilyTest, ValidateShape) {
  EXPECT_TRUE(F().ValidateShape({8192, 8192}).ok());
  EXPECT_TRUE(F().ValidateShape({1, 1}).ok());
  EXPECT_EQ(F().ValidateShape({8192}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(F().ValidateShape({0, 5}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(F().ValidateShape({65536, 32768}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(TransposeFamilyTest, SpaceSizeAndPruning) {
  const auto space = F().Space();
  std::vector<Pruned> pruned;
  const auto valid = F().ValidSpace(Sm90ReferenceDevice(), &pruned);
  // KIND x TILE x BY x PAD = 72, less the restrictions: naive takes PAD = 0
  // (12), TILE % BY (8 more), whole warps (2 vec4 16x4), 1024 threads (2
  // 64x32): 50, all valid on the device.
  EXPECT_EQ(space.size(), 50u);
  EXPECT_EQ(valid.size(), 50u);
  EXPECT_TRUE(pruned.empty());

  // Every kind is represented, and the references' winners are in the space.
  std::set<std::string> names;
  std::set<int64_t> kinds;
  for (const auto& c : valid) {
    names.insert(F().ConfigName(c));
    kinds.insert(c.at("KIND"));
  }
  EXPECT_EQ(kinds, (std::set<int64_t>{0, 1, 2}));
  for (const char* want : {"transpose_naive_32x8", "transpose_tiled_32x8_p0",
                           "transpose_tiled_32x8_p1", "transpose_tiled_32x32_p1",
                           "transpose_tiled_64x8_p1", "transpose_tiled_16x16_p1",
                           "transpose_vec4_32x8_p1"}) {
    EXPECT_TRUE(names.contains(want)) << want;
  }
}

TEST(TransposeFamilyTest, SpaceHasNoDuplicatesAndUniqueNames) {
  const auto space = F().Space();
  std::set<Config> configs(space.begin(), space.end());
  EXPECT_EQ(configs.size(), space.size());
  std::set<std::string> names, keys, exprs;
  for (const auto& c : space) {
    names.insert(F().ConfigName(c));
    keys.insert(F().ConfigKey(c));
    exprs.insert(F().Source(c).name_expression);
  }
  EXPECT_EQ(names.size(), space.size());
  EXPECT_EQ(keys.size(), space.size());
  EXPECT_EQ(exprs.size(), space.size());
}

TEST(TransposeFamilyTest, EveryValidConfigIsComplete) {
  for (const auto& c : F().ValidSpace(Sm90ReferenceDevice(), nullptr)) {
    EXPECT_EQ(c.size(), F().params().size());
    const KernelSource src = F().Source(c);
    EXPECT_EQ(src.parts, std::vector<std::string>{"transpose/transpose.cuh"});
    EXPECT_TRUE(src.options.empty());  // every parameter is a template argument
    const auto g = F().Geometry(c, {8191, 4097}, Sm90ReferenceDevice());
    ASSERT_EQ(g.block_size(), 3);
    EXPECT_EQ(g.block(0) * g.block(1) * g.block(2) % 32, 0u) << F().ConfigName(c);
    EXPECT_LE(g.block(0) * g.block(1) * g.block(2), 1024u) << F().ConfigName(c);
  }
}

TEST(TransposeFamilyTest, NamesAndSources) {
  EXPECT_EQ(F().ConfigName(Cfg(0, 32, 8, 0)), "transpose_naive_32x8");
  EXPECT_EQ(F().ConfigName(Cfg(1, 32, 8, 1)), "transpose_tiled_32x8_p1");
  EXPECT_EQ(F().ConfigName(Cfg(2, 64, 16, 0)), "transpose_vec4_64x16_p0");
  EXPECT_EQ(F().Source(Cfg(0, 32, 8, 0)).name_expression, "transpose<0, 32, 8, 0>");
  EXPECT_EQ(F().Source(Cfg(1, 32, 8, 1)).name_expression, "transpose<1, 32, 8, 1>");
  EXPECT_EQ(F().Source(Cfg(2, 64, 16, 0)).name_expression, "transpose<2, 64, 16, 0>");
  const std::string src = SourceText(F().Source(Cfg(0, 32, 8, 0)));
  EXPECT_EQ(src.find("#include"), std::string::npos);
  EXPECT_EQ(spec::GlobalKernels(src), std::vector<std::string>{"transpose"});
}

TEST(TransposeFamilyTest, CheckRejectsUnknownMissingAndRestricted) {
  const v1::Device d = Sm90ReferenceDevice();
  EXPECT_TRUE(F().Check(Cfg(1, 32, 8, 1), d).ok());

  Config unknown = Cfg(1, 32, 8, 1);
  unknown["BX"] = 32;
  ExpectRejected(unknown, d, "unknown parameter 'BX'");

  Config missing = Cfg(1, 32, 8, 1);
  missing.erase("PAD");
  ExpectRejected(missing, d, "missing parameter 'PAD'");

  ExpectRejected(Cfg(3, 32, 8, 1), d, "KIND=3 is not one of");
  ExpectRejected(Cfg(1, 48, 8, 1), d, "TILE=48 is not one of");
  ExpectRejected(Cfg(1, 32, 8, 2), d, "PAD=2 is not one of");
  // The spec's restrictions: naive takes PAD = 0, TILE % BY, whole warps, 1024 threads.
  for (const Config& c : {Cfg(0, 32, 8, 1), Cfg(1, 16, 32, 1), Cfg(2, 16, 4, 1), Cfg(1, 64, 32, 1)}) {
    ExpectRejected(c, d, "breaks a restriction of transpose");
  }
}

TEST(TransposeFamilyTest, GeometrySquare8192) {
  const Shape s = {8192, 8192};
  auto g = F().Geometry(Cfg(1, 32, 8, 1), s, Sm90ReferenceDevice());
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{256 * 256, 1, 1}));
  EXPECT_EQ(Block(g), (std::vector<uint32_t>{32, 8, 1}));
  EXPECT_EQ(g.dynamic_shared_bytes(), 0u);

  g = F().Geometry(Cfg(0, 16, 16, 0), s, Sm90ReferenceDevice());
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{512 * 512, 1, 1}));
  EXPECT_EQ(Block(g), (std::vector<uint32_t>{16, 16, 1}));

  g = F().Geometry(Cfg(2, 64, 16, 1), s, Sm90ReferenceDevice());
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{128 * 128, 1, 1}));
  EXPECT_EQ(Block(g), (std::vector<uint32_t>{16, 16, 1}));
  EXPECT_EQ(g.dynamic_shared_bytes(), 0u);
}

TEST(TransposeFamilyTest, GeometryOddShape) {
  const Shape s = {8191, 4097};  // ceil(8191/32) = 256 tile rows, ceil(4097/32) = 129 tile columns
  auto g = F().Geometry(Cfg(1, 32, 8, 1), s, Sm90ReferenceDevice());
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{256 * 129, 1, 1}));
  EXPECT_EQ(Block(g), (std::vector<uint32_t>{32, 8, 1}));

  g = F().Geometry(Cfg(2, 64, 4, 0), s, Sm90ReferenceDevice());  // 128 x 65 tiles
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{128 * 65, 1, 1}));
  EXPECT_EQ(Block(g), (std::vector<uint32_t>{16, 4, 1}));

  g = F().Geometry(Cfg(0, 16, 8, 0), s, Sm90ReferenceDevice());  // 512 x 257 tiles
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{512 * 257, 1, 1}));
  EXPECT_EQ(Block(g), (std::vector<uint32_t>{16, 8, 1}));
}

TEST(TransposeFamilyTest, GeometryTinyAndExtremeShapes) {
  for (const auto& c : F().ValidSpace(Sm90ReferenceDevice(), nullptr)) {
    const auto g = F().Geometry(c, {1, 1}, Sm90ReferenceDevice());
    EXPECT_EQ(Grid(g), (std::vector<uint32_t>{1, 1, 1})) << F().ConfigName(c);
    const uint32_t bx = c.at("KIND") == 2 ? c.at("TILE") / 4 : c.at("TILE");
    EXPECT_EQ(Block(g), (std::vector<uint32_t>{bx, static_cast<uint32_t>(c.at("BY")), 1}));
  }
  // One long row or column: the 1-D grid has no 65535 limit on tile rows.
  auto g = F().Geometry(Cfg(1, 16, 8, 1), {(int64_t{1} << 30), 1}, Sm90ReferenceDevice());
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{1u << 26, 1, 1}));
  g = F().Geometry(Cfg(1, 16, 8, 1), {1, (int64_t{1} << 30)}, Sm90ReferenceDevice());
  EXPECT_EQ(Grid(g), (std::vector<uint32_t>{1u << 26, 1, 1}));
}

TEST(TransposeFamilyTest, ConfigKeyRoundTrip) {
  for (const auto& c : F().Space()) {
    const std::string key = F().ConfigKey(c);
    auto parsed = F().ParseConfigKey(key);
    ASSERT_TRUE(parsed.ok()) << key << ": " << parsed.status();
    EXPECT_EQ(*parsed, c) << key;
  }
  EXPECT_EQ(F().ConfigKey(Cfg(1, 32, 8, 1)), "KIND=1,TILE=32,BY=8,PAD=1");
}

}  // namespace
}  // namespace tuned
