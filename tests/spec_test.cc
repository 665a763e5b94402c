// Kernel specs (families/spec/): expressions, TOML and JSON, validation and
// the list of bad specs, enumeration, launch evaluation, the content hash,
// and the specs of examples/kernels/.
#include <gtest/gtest.h>
#include <google/protobuf/util/message_differencer.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"

#include "families/spec/expr.h"
#include "families/spec/spec.h"

namespace tuned::spec {
namespace {

using v1::KernelSpec;

// A complete, valid spec; the bad specs below are changes of it.
constexpr const char* kToml = R"toml(
name = "scale"
description = "y = 2 x"
kernel = "scale"
source = '''
// y = 2 x, ITEMS elements per thread
__global__ void __launch_bounds__(1024) scale(const float* x, float* y, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;
  for (int j = 0; j < ITEMS; ++j) if (i + j < n) y[i + j] = 2.0f * x[i + j];
}
__global__ void scale_ref(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
'''
dims = ["n"]
restrictions = ["BLOCK * ITEMS <= 512"]
params = [
  { name = "BLOCK", values = [64, 128, 256], doc = "threads per block" },
  { name = "ITEMS", values = [1, 2, 4] },
]
arguments = [
  { name = "x", type = "f32", size = "n", role = "in", fill = "uniform" },
  { name = "y", type = "f32", size = "n", role = "out", fill = "constant", fill_value = 0.5 },
  { name = "n", type = "i32", value = "n" },
]
launch = { block = ["BLOCK"], grid = ["ceil_div(n, BLOCK * ITEMS)"], shared_memory_bytes = 0 }
verification = { reference = "scale_ref", rtol = 0, atol = 1e-6, launch = { block = [256], grid = ["ceil_div(n, 256)"] } }
work = { expression = "8 * n", unit = "GB/s" }
default_config = { BLOCK = 128, ITEMS = 1 }
sample_dims = [{ n = 1000 }, { n = 1 }]
)toml";

constexpr const char* kJson = R"json({
  "name": "scale", "description": "y = 2 x", "kernel": "scale",
  "source": "// y = 2 x, ITEMS elements per thread\n__global__ void __launch_bounds__(1024) scale(const float* x, float* y, int n) {\n  int i = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;\n  for (int j = 0; j < ITEMS; ++j) if (i + j < n) y[i + j] = 2.0f * x[i + j];\n}\n__global__ void scale_ref(const float* x, float* y, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2.0f * x[i];\n}\n",
  "dims": ["n"], "restrictions": ["BLOCK * ITEMS <= 512"],
  "params": [{"name": "BLOCK", "values": [64, 128, 256], "doc": "threads per block"},
             {"name": "ITEMS", "values": [1, 2, 4]}],
  "arguments": [{"name": "x", "type": "f32", "size": "n", "role": "in", "fill": "uniform"},
                {"name": "y", "type": "f32", "size": "n", "role": "out", "fill": "constant", "fill_value": 0.5},
                {"name": "n", "type": "i32", "value": "n"}],
  "launch": {"block": ["BLOCK"], "grid": ["ceil_div(n, BLOCK * ITEMS)"], "shared_memory_bytes": 0},
  "verification": {"reference": "scale_ref", "rtol": 0, "atol": 1e-6,
                   "launch": {"block": [256], "grid": ["ceil_div(n, 256)"]}},
  "work": {"expression": "8 * n", "unit": "GB/s"},
  "default_config": {"BLOCK": 128, "ITEMS": 1},
  "sample_dims": [{"n": 1000}, {"n": 1}]
})json";

KernelSpec Base() {
  auto s = ParseSpecToml(kToml);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

int64_t Eval(const std::string& text, const std::map<std::string, int64_t>& vars = {}) {
  auto v = EvaluateInt(text, vars);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status();
  return v.value_or(-999);
}

void ExpectInvalid(const absl::Status& s, const std::vector<std::string>& parts) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  for (const std::string& p : parts) EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s;
}

TEST(Expr, PrecedenceAndIntegerArithmetic) {
  EXPECT_EQ(Eval("2 + 3 * 4"), 14);
  EXPECT_EQ(Eval("(2 + 3) * 4"), 20);
  EXPECT_EQ(Eval("10 - 4 - 3"), 3);
  EXPECT_EQ(Eval("7 / 2"), 3);
  EXPECT_EQ(Eval("-7 / 2"), -3);  // C: toward zero
  EXPECT_EQ(Eval("7 % 3"), 1);
  EXPECT_EQ(Eval("-7 % 3"), -1);
  EXPECT_EQ(Eval("2 * 7 % 4"), 2);  // left to right, as in C
  EXPECT_EQ(Eval("-n * -k", {{"n", 3}, {"k", 4}}), 12);
  EXPECT_EQ(Eval("ceil_div(10, 4)"), 3);
  EXPECT_EQ(Eval("ceil_div(12, 4)"), 3);
  EXPECT_EQ(Eval("ceil_div(n, BLOCK * ITEMS)", {{"n", 1000}, {"BLOCK", 128}, {"ITEMS", 2}}), 4);
  EXPECT_EQ(Eval("min(5, 3, 9)"), 3);
  EXPECT_EQ(Eval("max(5, 3, 9)"), 9);
  EXPECT_EQ(Eval("n > 4 ? 10 : 20", {{"n", 5}}), 10);
  EXPECT_EQ(Eval("4294967296 * 1024"), int64_t{1} << 42);
}

TEST(Expr, Booleans) {
  const std::map<std::string, int64_t> v{{"N", 1024}, {"TILE", 16}, {"VEC", 4}};
  EXPECT_EQ(Eval("N % (TILE * VEC) == 0", v), 1);
  EXPECT_EQ(Eval("N % (TILE * VEC * 3) == 0", v), 0);
  EXPECT_EQ(Eval("TILE * VEC <= 64 && TILE >= 8", v), 1);
  EXPECT_EQ(Eval("TILE < 8 || VEC == 4", v), 1);
  EXPECT_EQ(Eval("!(TILE < 8)", v), 1);
  EXPECT_EQ(Eval("1 < 2 == 1"), 1);  // == below < as in C
  EXPECT_EQ(Eval("0 || 1 && 0"), 0);  // && above ||
  EXPECT_EQ(Eval("TILE != 16", v), 0);
  const std::vector<std::string> names{"A", "B"};
  for (const char* yes : {"A < B", "A % 2 == 0", "(A <= B)", "A && B", "!A", "!(A + B)", "(A + 1) * 2 >= B"}) {
    EXPECT_TRUE(Expr::Compile(yes, names)->IsBoolean()) << yes;
  }
  for (const char* no : {"A % 2", "A + B", "(A)", "A ? B < 1 : 0", "!A + 1", "min(A < B, 1)"}) {
    EXPECT_FALSE(Expr::Compile(no, names)->IsBoolean()) << no;
  }
  auto e = Expr::Compile("A % 3", names);
  ExpectInvalid(e->EvaluateBool(std::vector<int64_t>{5, 0}).status(), {"not boolean"});
}

TEST(Expr, CompileOnceEvaluateMany) {
  auto e = Expr::Compile("ceil_div(n, B) * B - n", {"n", "B"});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->used(), (std::vector<std::string>{"B", "n"}));
  int64_t total = 0;
  for (int64_t n = 1; n <= 1000; ++n) total += *e->EvaluateInt(std::vector<int64_t>{n, 32});
  EXPECT_EQ(total, 15596);  // sum of the padding to a multiple of 32
}

TEST(Expr, Errors) {
  const std::vector<std::string> names{"n", "k"};
  ExpectInvalid(Expr::Compile("n + m", names).status(), {"unknown name 'm'", "known: n, k"});
  ExpectInvalid(Expr::Compile("sqrt(n)", names).status(), {"unknown function 'sqrt'"});
  ExpectInvalid(Expr::Compile("n +* 2", names).status(), {"syntax error"});
  ExpectInvalid(Expr::Compile("(n", names).status(), {"syntax error"});
  ExpectInvalid(Expr::Compile("n ^ 2", names).status(), {"syntax error"});
  ExpectInvalid(Expr::Compile("  ", names).status(), {"empty expression"});
  auto div = Expr::Compile("n / (k - 1)", names);
  ASSERT_TRUE(div.ok());  // the values 1, 1 of Compile's parse are no error
  ExpectInvalid(div->EvaluateInt(std::vector<int64_t>{4, 1}).status(), {"division by zero"});
  EXPECT_EQ(*div->EvaluateInt(std::vector<int64_t>{4, 3}), 2);
  ExpectInvalid(EvaluateInt("5 % 0", {}).status(), {"modulo by zero"});
  ExpectInvalid(EvaluateInt("ceil_div(5, 0)", {}).status(), {"division by zero"});
  ExpectInvalid(EvaluateInt("n * 1.5", {{"n", 3}}).status(), {"4.5", "not an integer"});
  ExpectInvalid(EvaluateInt("n / 1.5", {{"n", 3}}).status(), {"not an integer"});
  ExpectInvalid(EvaluateInt("n * n * n * n", {{"n", 100000}}).status(), {"beyond +-2^53"});
  // An operand of / % ceil_div beyond 2^53, a variable or a literal: an
  // error, not a conversion to int64 out of its range (fuzz/corpus/spec/regress-expr-*).
  ExpectInvalid(EvaluateInt("ceil_div(n, 1)", {{"n", INT64_MAX}}).status(), {"beyond +-2^53"});
  ExpectInvalid(EvaluateInt("n / 2", {{"n", INT64_MIN}}).status(), {"beyond +-2^53"});
  ExpectInvalid(EvaluateInt("1e300 % 7", {}).status(), {"beyond +-2^53"});
}

TEST(Parse, TomlAndJsonGiveTheSameSpec) {
  auto toml = ParseSpecToml(kToml);
  ASSERT_TRUE(toml.ok()) << toml.status();
  auto json = ParseSpecJson(kJson);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*toml, *json))
      << toml->DebugString() << "\n---\n" << json->DebugString();
  EXPECT_EQ(SpecHash(*toml), SpecHash(*json));
  const KernelSpec& s = *toml;
  EXPECT_EQ(s.name(), "scale");
  EXPECT_EQ(s.kernel(), "scale");
  ASSERT_EQ(s.params_size(), 2);
  EXPECT_EQ(s.params(0).name(), "BLOCK");
  EXPECT_EQ(s.params(0).values_size(), 3);
  EXPECT_EQ(s.params(0).doc(), "threads per block");
  EXPECT_EQ(s.params(1).pass(), v1::SPEC_PASS_DEFINE);
  ASSERT_EQ(s.arguments_size(), 3);
  EXPECT_EQ(s.arguments(1).buffer().role(), v1::SPEC_ROLE_OUT);
  EXPECT_EQ(s.arguments(1).buffer().fill(), v1::SPEC_FILL_CONSTANT);
  EXPECT_EQ(s.arguments(1).buffer().fill_value(), 0.5);
  EXPECT_EQ(s.arguments(2).scalar().type(), v1::SPEC_TYPE_I32);
  EXPECT_EQ(s.launch().grid(0), "ceil_div(n, BLOCK * ITEMS)");
  EXPECT_EQ(s.launch().shared_memory_bytes(), "0");
  EXPECT_EQ(s.verification().reference_kernel(), "scale_ref");
  EXPECT_EQ(s.verification().reference_launch().block(0), "256");
  EXPECT_EQ(s.verification().atol(), 1e-6);
  EXPECT_EQ(s.work().unit(), "GB/s");
  EXPECT_EQ(s.default_config().at("BLOCK"), 128);
  ASSERT_EQ(s.sample_dims_size(), 2);
  EXPECT_EQ(s.sample_dims(0).dims().at("n"), 1000);
  EXPECT_TRUE(ValidateSpec(s).ok()) << ValidateSpec(s);
}

TEST(Parse, GlobalKernels) {
  EXPECT_EQ(GlobalKernels("template <int T> __global__ void __launch_bounds__(T, 2) k1(int* p) {}\n"
                          "// __global__ void commented(int);\n"
                          "const char* s = \"__global__ void in_string(\";\n"
                          "extern \"C\" __global__ void k2(float x) {}\n/* __global__ void c2() */"),
            (std::vector<std::string>{"k1", "k2"}));
}

TEST(Enumerate, RestrictionsOverParamsAndDims) {
  KernelSpec s = Base();
  s.clear_restrictions();
  s.clear_params();
  for (const char* name : {"A", "B"}) {
    auto* p = s.add_params();
    p->set_name(name);
    for (int v : {1, 2, 4, 8}) p->add_values(v);
  }
  s.set_source(s.source() + "\n#define BLOCK 1\n#define ITEMS 1\n");
  s.mutable_launch()->set_block(0, "A * B");
  s.mutable_launch()->set_grid(0, "ceil_div(n, A)");
  s.clear_default_config();
  s.add_restrictions("A * B <= 8");
  s.add_restrictions("n % (A * B) == 0");
  auto all = EnumerateSpace(s);  // the second restriction needs n
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 10u);
  EXPECT_EQ(all->front(), (Config{{"A", 1}, {"B", 1}}));
  EXPECT_EQ(all->at(1), (Config{{"A", 1}, {"B", 2}}));  // the last parameter varies fastest
  auto at12 = EnumerateSpace(s, {{"n", 12}});
  ASSERT_TRUE(at12.ok()) << at12.status();
  EXPECT_EQ(at12->size(), 6u);  // A * B in {1, 2, 4}
  EXPECT_EQ(EnumerateSpace(s, {{"n", 7}})->size(), 1u);
  EXPECT_EQ(EnumerateSpace(s, {{"n", 1024}})->size(), 10u);
  s.clear_restrictions();
  EXPECT_EQ(EnumerateSpace(s)->size(), 16u);
  ExpectInvalid(EnumerateSpace(s, {}).status(), {"dims", "no value for dimension \"n\""});
  ExpectInvalid(EnumerateSpace(s, {{"n", 0}}).status(), {"dims", "not >= 1"});
  ExpectInvalid(EnumerateSpace(s, {{"n", 4}, {"m", 1}}).status(), {"\"m\" is not a dimension"});
}

TEST(Launch, EvaluateLaunchNumbers) {
  const KernelSpec s = Base();
  auto l = EvaluateLaunch(s, {{"BLOCK", 128}, {"ITEMS", 4}}, {{"n", 1000}});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->kernel.block.x, 128);
  EXPECT_EQ(l->kernel.block.y, 1);
  EXPECT_EQ(l->kernel.grid.x, 2);  // ceil(1000 / 512)
  EXPECT_EQ(l->kernel.grid.z, 1);
  EXPECT_EQ(l->kernel.shared_memory_bytes, 0);
  ASSERT_TRUE(l->reference.has_value());
  EXPECT_EQ(l->reference->block.x, 256);
  EXPECT_EQ(l->reference->grid.x, 4);
  ASSERT_EQ(l->arguments.size(), 3u);
  EXPECT_TRUE(l->arguments[0].is_buffer);
  EXPECT_EQ(l->arguments[0].elements, 1000);
  EXPECT_EQ(l->arguments[0].bytes, 4000);
  EXPECT_FALSE(l->arguments[2].is_buffer);
  EXPECT_EQ(l->arguments[2].scalar, 1000);
  EXPECT_EQ(l->work, 8000);
  EXPECT_EQ(l->name_expression, "scale");
  EXPECT_EQ(l->defines, (std::vector<std::string>{"-DBLOCK=128", "-DITEMS=4"}));
  ExpectInvalid(EvaluateLaunch(s, {{"BLOCK", 256}, {"ITEMS", 4}}, {{"n", 1000}}).status(),
                {"restrictions[0]", "fails at n=1000 BLOCK=256 ITEMS=4"});
  ExpectInvalid(EvaluateLaunch(s, {{"BLOCK", 100}, {"ITEMS", 4}}, {{"n", 1000}}).status(),
                {"config", "BLOCK = 100 is not one of its values"});
  ExpectInvalid(EvaluateLaunch(s, {{"BLOCK", 128}}, {{"n", 1000}}).status(), {"config", "no value for parameter \"ITEMS\""});
}

TEST(Launch, TemplateParameters) {
  KernelSpec s = Base();
  s.set_source("template <int B, int I> __global__ void scale(const float* x, float* y, int n) {}\n"
               "__global__ void scale_ref(const float* x, float* y, int n) {}\n");
  s.set_kernel("scale<BLOCK, ITEMS>");
  s.mutable_params(0)->set_pass(v1::SPEC_PASS_TEMPLATE);
  s.mutable_params(1)->set_pass(v1::SPEC_PASS_TEMPLATE);
  ASSERT_TRUE(ValidateSpec(s).ok()) << ValidateSpec(s);
  auto l = EvaluateLaunch(s, {{"BLOCK", 64}, {"ITEMS", 2}}, {{"n", 10}});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->name_expression, "scale<64, 2>");
  EXPECT_TRUE(l->defines.empty());
}

TEST(Hash, StableAndSensitive) {
  const KernelSpec a = Base(), b = Base();
  EXPECT_EQ(SpecHash(a), SpecHash(b));
  EXPECT_EQ(SpecHash(a).size(), 64u);
  KernelSpec c = a;
  c.set_source(c.source() + " ");
  EXPECT_NE(SpecHash(a), SpecHash(c));
  KernelSpec d = a;
  d.mutable_params(0)->set_values(0, 32);
  EXPECT_NE(SpecHash(a), SpecHash(d));
  // Pinned: the same bytes on every machine and in every process (this is
  // SHA-256 of the bytes 0a0174 62050a01411001 62050a01421002, written by
  // hand from the wire format: fields in number order, map entries by key).
  KernelSpec tiny;
  tiny.set_name("t");
  (*tiny.mutable_default_config())["B"] = 2;
  (*tiny.mutable_default_config())["A"] = 1;
  EXPECT_EQ(SpecHash(tiny), "40fcad3faba0822278b2a0dea6fc36b63f7805b8aa60b5ba4a9ea631e0adf8a3");
}

struct BadCase {
  std::string what;
  std::function<void(KernelSpec&)> change;  // applied to Base()
  std::vector<std::string> expect;          // in the message
};

TEST(Validate, BadSpecs) {
  const std::vector<BadCase> cases = {
      {"unknown name", [](KernelSpec& s) { s.mutable_launch()->set_grid(0, "ceil_div(nn, BLOCK)"); },
       {"launch.grid[0]", "unknown name 'nn'"}},
      {"unknown function", [](KernelSpec& s) { s.mutable_launch()->set_grid(0, "sqrt(n)"); },
       {"launch.grid[0]", "unknown function 'sqrt'"}},
      {"syntax error", [](KernelSpec& s) { s.mutable_launch()->set_grid(0, "ceil_div(n, BLOCK"); },
       {"launch.grid[0]", "syntax error"}},
      {"division by zero", [](KernelSpec& s) { s.mutable_launch()->set_grid(0, "n / (ITEMS - ITEMS)"); },
       {"sample_dims[0]", "launch.grid[0]", "division by zero"}},
      {"modulo by zero", [](KernelSpec& s) { s.add_restrictions("n % (BLOCK - BLOCK) == 0"); },
       {"restrictions[1]", "modulo by zero"}},
      {"grid of 0", [](KernelSpec& s) { s.mutable_launch()->set_grid(0, "n / 4096"); },
       {"launch.grid[0]", "value 0", "at least 1"}},
      {"block of 0", [](KernelSpec& s) { s.mutable_launch()->set_block(0, "BLOCK - 64"); },
       {"launch.block[0]", "value 0", "at least 1"}},
      {"block over 1024 threads", [](KernelSpec& s) { s.mutable_launch()->add_block("ITEMS * 8"); },
       {"launch.block", "x*y*z <= 1024"}},
      {"grid.y over 65535", [](KernelSpec& s) { s.mutable_launch()->add_grid("n * 100"); },
       {"launch.grid", "65535"}},
      {"buffer over 2^31 elements", [](KernelSpec& s) { s.mutable_arguments(0)->mutable_buffer()->set_size("n * n * 4096"); },
       {"arguments[0].size", "4096000000 elements", "2^31"}},
      {"non-integer size", [](KernelSpec& s) { s.mutable_arguments(0)->mutable_buffer()->set_size("n * 1.5 + 0.25"); },
       {"arguments[0].size", "not an integer"}},
      {"buffer size over a parameter", [](KernelSpec& s) { s.mutable_arguments(0)->mutable_buffer()->set_size("n * ITEMS"); },
       {"arguments[0].size", "unknown name 'ITEMS'", "the dimensions only"}},
      {"scalar over a parameter", [](KernelSpec& s) { s.mutable_arguments(2)->mutable_scalar()->set_value("BLOCK"); },
       {"arguments[2].value", "unknown name 'BLOCK'", "the dimensions only"}},
      {"scalar over i32", [](KernelSpec& s) { s.mutable_arguments(2)->mutable_scalar()->set_value("n * 10000000"); },
       {"arguments[2].value", "does not fit i32"}},
      {"missing kernel", [](KernelSpec& s) { s.set_kernel("scale2"); },
       {"kernel", "no __global__ function \"scale2\"", "found: scale, scale_ref"}},
      {"no kernel name", [](KernelSpec& s) { s.clear_kernel(); }, {"kernel", "missing"}},
      {"no __global__", [](KernelSpec& s) { s.set_source("int f() { return 1; }"); }, {"source", "no __global__"}},
      {"empty space", [](KernelSpec& s) { s.set_restrictions(0, "BLOCK > 1024"); },
       {"restrictions", "the space is empty"}},
      {"empty space at a problem", [](KernelSpec& s) { s.add_restrictions("n % 7 == 0"); },
       {"sample_dims[0]", "no config of the space holds at n=1000"}},
      {"restriction not boolean", [](KernelSpec& s) { s.add_restrictions("BLOCK % 2"); },
       {"restrictions[1]", "is not boolean", "top-level operator"}},
      {"duplicate parameter", [](KernelSpec& s) { s.mutable_params(1)->set_name("BLOCK"); },
       {"params[1].name", "duplicate parameter \"BLOCK\""}},
      {"parameter named as a dimension", [](KernelSpec& s) { s.mutable_params(1)->set_name("n"); },
       {"params[1].name", "name of a dimension"}},
      {"parameter not an identifier", [](KernelSpec& s) { s.mutable_params(1)->set_name("2X"); },
       {"params[1].name", "not a C identifier"}},
      // Names the source sees: a keyword is caught here, naming the field,
      // not by the compiler; a reserved name would redefine the compiler's.
      {"parameter named int", [](KernelSpec& s) { s.mutable_params(1)->set_name("int"); },
       {"params[1].name", "\"int\" is a C++ keyword"}},
      {"argument named template", [](KernelSpec& s) { s.mutable_arguments(0)->set_name("template"); },
       {"arguments[0].name", "\"template\" is a C++ keyword"}},
      {"parameter __CUDA_ARCH__", [](KernelSpec& s) { s.mutable_params(1)->set_name("__CUDA_ARCH__"); },
       {"params[1].name", "\"__CUDA_ARCH__\" is reserved"}},
      {"dimension _N", [](KernelSpec& s) { s.set_dims(0, "_N"); }, {"dims[0]", "\"_N\" is reserved"}},
      {"buffer of exactly 2^31 elements",
       [](KernelSpec& s) { s.mutable_arguments(0)->mutable_buffer()->set_size("n * n * 2147483 / 1000 + 648"); },
       {"arguments[0].size", "2147483648 elements", "2^31 - 1"}},
      {"empty values", [](KernelSpec& s) { s.mutable_params(0)->clear_values(); }, {"params[0].values", "empty"}},
      {"duplicate value", [](KernelSpec& s) { s.mutable_params(0)->add_values(64); }, {"params[0].values", "duplicate value"}},
      {"duplicate dimension", [](KernelSpec& s) { s.add_dims("n"); }, {"dims[1]", "duplicate dimension"}},
      {"missing name", [](KernelSpec& s) { s.clear_name(); }, {"name", "missing"}},
      {"bad name", [](KernelSpec& s) { s.set_name("my kernel"); }, {"name", "\"my kernel\" is not"}},
      {"source over 1 MB", [](KernelSpec& s) { s.set_source(s.source() + std::string(1 << 20, ' ')); },
       {"source", "bytes, more than the limit of 1048576"}},
      {"space over 100,000",
       [](KernelSpec& s) {
         s.clear_restrictions();
         for (int i = 0; i < 2; ++i) {
           auto* p = s.add_params();
           p->set_name(i == 0 ? "P" : "Q");
           for (int v = 0; v < 200; ++v) p->add_values(v);
         }
       },
       {"params", "more than 100000 configs"}},
      {"default config not in space", [](KernelSpec& s) { (*s.mutable_default_config())["ITEMS"] = 8; },
       {"default_config", "ITEMS = 8 is not one of its values"}},
      {"default config breaks a restriction", [](KernelSpec& s) {
         (*s.mutable_default_config())["BLOCK"] = 256;
         (*s.mutable_default_config())["ITEMS"] = 4;
       },
       {"default_config", "not in the space"}},
      {"verification names an unknown config",
       [](KernelSpec& s) {
         s.mutable_verification()->clear_reference_kernel();
         s.mutable_verification()->clear_reference_launch();
         auto& ref = *s.mutable_verification()->mutable_reference_config();
         ref["BLOCK"] = 64;
         ref["ITEMS"] = 1;
         ref["FOO"] = 1;
       },
       {"verification.config", "\"FOO\" is not a parameter"}},
      {"verification names an unknown kernel", [](KernelSpec& s) { s.mutable_verification()->set_reference_kernel("nope"); },
       {"verification.reference", "no __global__ function \"nope\""}},
      {"verification with neither", [](KernelSpec& s) { s.mutable_verification()->clear_reference_kernel(); },
       {"verification", "give either"}},
      {"reference launch missing", [](KernelSpec& s) { s.mutable_verification()->clear_reference_launch(); },
       {"verification.launch.block", "missing"}},
      {"negative rtol", [](KernelSpec& s) { s.mutable_verification()->set_rtol(-1); }, {"verification.rtol", "not in [0, 1)"}},
      {"NaN atol", [](KernelSpec& s) { s.mutable_verification()->set_atol(std::nan("")); }, {"verification.atol", "not >= 0"}},
      {"unknown work unit", [](KernelSpec& s) { s.mutable_work()->set_unit("GFLOP/s"); }, {"work.unit", "unknown unit"}},
      {"duplicate argument", [](KernelSpec& s) { s.mutable_arguments(1)->set_name("x"); },
       {"arguments[1].name", "duplicate argument \"x\""}},
      {"missing role", [](KernelSpec& s) { s.mutable_arguments(0)->mutable_buffer()->clear_role(); },
       {"arguments[0].role", "missing"}},
      {"no output", [](KernelSpec& s) { s.mutable_arguments(1)->mutable_buffer()->set_role(v1::SPEC_ROLE_IN); },
       {"arguments", "no output buffer"}},
      {"f16 scalar", [](KernelSpec& s) { s.mutable_arguments(2)->mutable_scalar()->set_type(v1::SPEC_TYPE_F16); },
       {"arguments[2].type", "a scalar is f32, f64, i32 or i64, not f16"}},
      {"template parameter not in the kernel", [](KernelSpec& s) { s.mutable_params(0)->set_pass(v1::SPEC_PASS_TEMPLATE); },
       {"kernel", "\"BLOCK\" has pass = \"template\""}},
      {"launch missing", [](KernelSpec& s) { s.clear_launch(); }, {"launch.block", "missing"}},
      {"expression beyond 2^53", [](KernelSpec& s) { s.mutable_work()->set_expression("n * n * n * n * n * n"); },
       {"work.expression", "beyond"}},
  };
  ASSERT_TRUE(ValidateSpec(Base()).ok()) << ValidateSpec(Base());
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    KernelSpec s = Base();
    c.change(s);
    ExpectInvalid(ValidateSpec(s), c.expect);
  }
  EXPECT_GE(cases.size(), 25u);
}

// Without sample_dims, a config whose block or shared memory breaks CUDA's
// limits at every problem is refused naming it; one that depends on the
// problem is left to the problem's own check.
TEST(Validate, LimitsThatNoProblemChangesWithoutSampleDims) {
  KernelSpec base = Base();
  base.clear_sample_dims();
  ASSERT_TRUE(ValidateSpec(base).ok()) << ValidateSpec(base);
  KernelSpec wide = base;
  wide.mutable_params(0)->add_values(2048);
  wide.set_restrictions(0, "BLOCK * ITEMS <= 2048");
  ExpectInvalid(ValidateSpec(wide), {"launch.block", "2048x1x1 threads at BLOCK=2048 ITEMS=1",
                                     "for every problem", "restrict the parameters"});
  KernelSpec tall = base;
  tall.mutable_launch()->add_block("ITEMS * 512");  // 64 x 2048 at ITEMS = 4
  ExpectInvalid(ValidateSpec(tall), {"launch.block", "64x512x1 threads at BLOCK=64 ITEMS=1"});
  KernelSpec smem = base;
  smem.mutable_launch()->set_shared_memory_bytes("BLOCK * ITEMS * 1024");
  ExpectInvalid(ValidateSpec(smem), {"launch.shared_memory_bytes", "262144 bytes at BLOCK=64 ITEMS=4",
                                     "for every problem"});
  KernelSpec by_problem = base;
  by_problem.mutable_launch()->add_block("n");  // too many threads only where n is large
  EXPECT_TRUE(ValidateSpec(by_problem).ok()) << ValidateSpec(by_problem);
}

TEST(Validate, BadFiles) {
  const std::vector<std::pair<std::string, std::string>> swaps = {
      {"type = \"f32\", size = \"n\", role = \"in\"", "type = \"f33\", size = \"n\", role = \"in\""},
      {"role = \"in\"", "role = \"input\""},
      {"fill = \"uniform\"", "fill = \"random\""},
      {"shared_memory_bytes = 0", "shared_mem = 0"},
      {"{ name = \"n\", type = \"i32\", value = \"n\" }", "{ name = \"n\", type = \"i32\", value = \"n\", size = \"1\" }"},
      {"values = [1, 2, 4]", "values = [1, 2.5, 4]"},
      {"dims = [\"n\"]", "dims = [\"n\""},
  };
  const std::vector<std::vector<std::string>> expect = {
      {"arguments[0].type", "unknown type \"f33\"", "f32, f64"},
      {"arguments[0].role", "unknown role \"input\""},
      {"arguments[0].fill", "unknown fill \"random\""},
      {"launch.shared_mem", "unknown key"},
      {"arguments[2]", "either `size`"},
      {"params[1].values[1]", "expected an integer"},
      {"TOML", "line"},
  };
  for (size_t i = 0; i < swaps.size(); ++i) {
    std::string text = kToml;
    const size_t at = text.find(swaps[i].first);
    ASSERT_NE(at, std::string::npos) << swaps[i].first;
    text.replace(at, swaps[i].first.size(), swaps[i].second);
    SCOPED_TRACE(swaps[i].second);
    ExpectInvalid(ParseSpecToml(text).status(), expect[i]);
  }
  ExpectInvalid(ParseSpecToml("name = \"x\"\nsource_file = \"k.cu\"").status(), {"source_file", "only LoadSpecFile"});
  ExpectInvalid(ParseSpecToml("name = \"x\"\nsource = \"\"\nsource_file = \"k.cu\"").status(), {"source_file", "not both"});
  ExpectInvalid(ParseSpecJson("{\"name\": ").status(), {"JSON"});
  ExpectInvalid(ParseSpecJson("{\"name\": 3}").status(), {"name", "expected a string"});
  ExpectInvalid(ValidateProblem(Base(), {}), {"dims", "no value for dimension \"n\""});
  EXPECT_EQ(LoadSpecFile("/nonexistent/spec.toml").status().code(), absl::StatusCode::kNotFound);
}

// A spec's source opens no file at compile time but the CUDA toolkit's
// headers by name: each way the preprocessor has to read a file is refused,
// naming the line, and a kernel that includes CUDA's headers passes.
TEST(Validate, SourceReadsNoFile) {
  const std::string kernel = "\n__global__ void k(float* x) { x[0] = 1; }\n";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"#include \"/proc/self/environ\"", "#include \"/proc/self/environ\""},
      {"#include </etc/passwd>", "#include </etc/passwd>"},
      {"#include </var/lib/tuned/tokens>", "#include </var/lib/tuned/tokens>"},
      {"#include <../../etc/tuned/tls.key>", "#include <../../etc/tuned/tls.key>"},
      {"#include <cuda/../../../../proc/self/environ>", "cuda/../"},
      {"#include \"spec_dir_link.h\"", "CUDA toolkit's headers only"},  // a symlink beside the spec
      {"#define SECRET \"/proc/self/environ\"\n#include SECRET", "names no <header>"},
      {"#include_next <cuda_fp16.h>", "#include_next"},
      {"#import <cuda_fp16.h>", "#import"},
      {"#if __has_include(\"/etc/passwd\")\n#endif", "__has_include"},
      {"#pragma GCC dependency \"/etc/passwd\"", "#pragma GCC dependency"},
      {"_Pragma(\"include_alias(\\\"a.h\\\", \\\"/etc/passwd\\\")\")", "_Pragma"},
      {"  #  include \"/etc/passwd\"", "#include"},
      {"#inc\\\nlude \"/etc/passwd\"", "line 1: #include"},  // a line splice
      {"# /* comment */ include \"/etc/passwd\"", "#include"},
      {"#include /*\n*/ \"/etc/passwd\"", "#include"},
      {"%:include \"/etc/passwd\"", "#include"},  // the digraph of #
      {"// fine\n/* two\nlines */\n#include \"/etc/passwd\"", "line 4:"},
      // Where a hand-written lexer would read a comment and the preprocessor
      // reads code: a raw string, a digit separator, a splice after a
      // backslash in a string, a splice that ends a // comment on an empty line.
      {"const char* r = R\"a(\"/*)a\";\n#include \"/proc/self/environ\"\n// */", "line 2: #include"},
      {"int x = 1'0; const char* s = \"a'/*\";\n#include \"/proc/self/environ\"\n// */",
       "line 2: #include"},
      {"const char* s = \"a\\\\\n/* \";\n#include \"/proc/self/environ\"\n*/", "line 3: #include"},
      {"// x\\\n\n#include \"/etc/passwd\"", "line 3: #include"},
      {"#include <cuda_fp16.h/*>\n#include \"/etc/passwd\"\n*/", "line 1: #include"},
      // __has_include and _Pragma pasted by ##, from a macro's arguments or body.
      {"#define C(a, b) a##b\n#if C(__has_, include)(\"/etc/passwd\")\n#endif", "line 2: __has_"},
      {"#define C(a, b) a%:%:b\n#define H __has\n#if C(H, _include)(\"/etc/passwd\")\n#endif",
       "line 2: __has: with ## it could paste __has_include"},
      {"#define C(a, b) a##b\nC(_Prag, ma)(\"GCC dependency \\\"/etc/passwd\\\"\")", "line 2: _Prag"},
      // What compilers read differently is refused.
      {"#include <cuda_fp16.h>\r#include \"/etc/passwd\"", "carriage return"},
      {"// a \\  \n#include \"/etc/passwd\"", "backslash before blanks"},
      {"int \\u0041 = 1;", "universal character name"},
      {"const char* r = R\"a(never ends", "raw string literal: it has no end"},
      {"#define R1 R\"(\n#include \"/etc/passwd\"\n)\"", "line 1: a raw string literal: one line at most"},
  };
  for (const auto& [head, want] : refused) {
    SCOPED_TRACE(head);
    const absl::Status s = CheckSourceReads(head + kernel);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(want), std::string::npos) << s;
  }
  for (const std::string head :
       {"#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <mma.h>",
        "#include <cooperative_groups.h>\n#include <cuda/std/cstdint>",
        "#pragma once\n// #include \"/etc/passwd\" in a comment\n/* #include </etc/passwd> */",
        "#define UNROLL _Pragma(\"unroll\")\nconst char* s = \"#include </etc/passwd>\";",
        "#pragma unroll 4\n#pragma nv_diag_suppress 177",
        "#include <cuda_fp16.h>\r\nint x = 1'000'000;\r\nconst char* r = R\"x(#include \"/etc/passwd\")x\";",
        "#define CAT(a, b) a##b\nint CAT(x, y) = 0x1p-3 + 1.5e+3f + 'a';"}) {
    EXPECT_TRUE(CheckSourceReads(head + kernel).ok()) << head << ": " << CheckSourceReads(head + kernel);
  }
  KernelSpec spec = Base();
  spec.set_source("#include \"/proc/self/environ\"\n" + spec.source());
  ExpectInvalid(ValidateSpec(spec), {"source: line 1", "/proc/self/environ", "CUDA toolkit's headers"});
}

// Every text field has a size limit, checked before anything reads it: a
// 60 MiB description is refused at once, naming the field and the limit.
TEST(Validate, TextFieldsHaveLimits) {
  KernelSpec spec = Base();
  spec.set_description(std::string(60 << 20, 'x'));
  const auto t0 = std::chrono::steady_clock::now();
  ExpectInvalid(ValidateSpec(spec), {"description: 62914560 bytes, more than the limit of 4096"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  spec = Base();
  spec.mutable_params(0)->set_doc(std::string(kMaxDocBytes + 1, 'd'));
  ExpectInvalid(ValidateSpec(spec), {"params[0].doc: 1025 bytes, more than the limit of 1024"});
  spec = Base();
  spec.mutable_params(0)->set_name(std::string(kMaxNameChars + 1, 'N'));
  ExpectInvalid(ValidateSpec(spec), {"params[0].name: 65 characters, more than the limit of 64"});
  spec = Base();
  spec.set_dims(0, std::string(100000, 'n'));
  ExpectInvalid(ValidateSpec(spec), {"dims[0]: 100000 characters"});
  spec = Base();
  (*spec.mutable_default_config())[std::string(200, 'k')] = 1;
  ExpectInvalid(ValidateSpec(spec), {"default_config: 200 characters"});
  ExpectInvalid(ParseSpecJson(std::string(kMaxSpecFileBytes + 1, ' ')).status(),
                {"spec: JSON of 2097153 bytes, more than the limit of 2097152"});
  spec = Base();
  spec.set_description(std::string(kMaxDescriptionBytes, 'x'));  // at the limit: fine
  EXPECT_TRUE(ValidateSpec(spec).ok()) << ValidateSpec(spec);
}

// Spec and source files are regular UTF-8 files of bounded size: a device
// (which may never end), a folder, binary text and an oversized file get a
// clear INVALID_ARGUMENT naming the file, and reading stops at the limit.
TEST(Validate, BadFilesOnDisk) {
  const std::filesystem::path dir =
      std::filesystem::path(testing::TempDir()) / ("tuned_spec_files_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "folder.cu");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  };
  auto spec_with = [&](const std::string& source_file) {
    std::string text = kToml;
    const size_t at = text.find("source = ");
    const size_t end = text.find("\'\'\'", text.find("\'\'\'", at) + 3) + 3;
    text.replace(at, end - at, "source_file = \"" + source_file + "\"");
    return write("spec.toml", text);
  };
  ExpectInvalid(LoadSpecFile(spec_with("/dev/zero")).status(), {"source_file", "/dev/zero", "not a regular file"});
  ExpectInvalid(LoadSpecFile(spec_with("folder.cu")).status(), {"source_file", "folder.cu", "is a folder"});
  write("binary.cu", std::string("__global__ void k() {}\n\xff\xfe\x00", 26));
  ExpectInvalid(LoadSpecFile(spec_with("binary.cu")).status(), {"source_file", "not UTF-8", "byte 23"});
  write("big.cu", std::string(kMaxSourceBytes + 1, ' '));
  ExpectInvalid(LoadSpecFile(spec_with("big.cu")).status(), {"source_file", "more than the limit of 1048576"});
  write("ok.cu", "// \u00e9t\u00e9: UTF-8 is fine\n__global__ void scale() {}\n");
  EXPECT_TRUE(LoadSpecFile(spec_with("ok.cu")).ok());
  ExpectInvalid(LoadSpecFile((dir / "folder.cu").string()).status(), {"spec file", "is a folder"});
  std::filesystem::remove_all(dir);
}

// A buffer argument of `type` and `role` with the TOML of its `fill` and
// `reset` keys ("" leaves a key out), parsed into the scale spec (kToml) in
// place of its first argument, `x` (the output `y` stays).
absl::StatusOr<KernelSpec> WithBuffer(const std::string& type, const std::string& role,
                                      const std::string& fill, const std::string& reset = "") {
  std::string toml = kToml;
  const std::string x = R"({ name = "x", type = "f32", size = "n", role = "in", fill = "uniform" })";
  toml.replace(toml.find(x), x.size(),
               absl::StrCat(R"({ name = "x", type = ")", type, R"(", size = "n", role = ")", role, "\"",
                            fill.empty() ? "" : ", fill = " + fill, reset.empty() ? "" : ", reset = " + reset, " }"));
  return ParseSpecToml(toml);
}

// `count` draws of `buffer`'s fill from one generator.
std::vector<double> Draws(const v1::SpecBuffer& buffer, int count) {
  std::mt19937_64 rng(7);
  FillSampler sampler(ResolveFill(buffer));
  std::vector<double> out;
  for (int i = 0; i < count; ++i) out.push_back(sampler.Next(rng));
  return out;
}

// Integer fills cover the type's range by default (u8: every byte value)
// and take a range of their own; floats keep [-1, 1); an `out` buffer
// without a fill is zeros, an `inout` one uniform.
TEST(Fill, DefaultsAndRangesOfEachType) {
  auto u8 = WithBuffer("u8", "inout", "");
  ASSERT_TRUE(u8.ok()) << u8.status();
  const v1::SpecBuffer& b = u8->arguments(0).buffer();
  EXPECT_EQ(ResolveFill(b).fill, v1::SPEC_FILL_UNIFORM);
  std::vector<double> d = Draws(b, 20000);
  std::set<double> seen(d.begin(), d.end());
  EXPECT_EQ(seen.size(), 256u);  // every byte value, and no other
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 255);
  for (double v : seen) EXPECT_EQ(v, std::floor(v));

  auto range = WithBuffer("u8", "in", "{ uniform = [10, 12] }");
  ASSERT_TRUE(range.ok()) << range.status();
  ASSERT_TRUE(ValidateSpec(*range).ok()) << ValidateSpec(*range);
  d = Draws(range->arguments(0).buffer(), 1000);
  EXPECT_EQ(std::set<double>(d.begin(), d.end()), (std::set<double>{10, 11, 12}));

  auto i32 = WithBuffer("i32", "in", "\"uniform\"");
  ASSERT_TRUE(i32.ok()) << i32.status();
  const FillRule r32 = ResolveFill(i32->arguments(0).buffer());
  EXPECT_EQ(r32.a, -32768);
  EXPECT_EQ(r32.b, 32767);
  d = Draws(i32->arguments(0).buffer(), 20000);
  EXPECT_LT(*std::min_element(d.begin(), d.end()), -30000);
  EXPECT_GT(*std::max_element(d.begin(), d.end()), 30000);
  auto i64 = WithBuffer("i64", "in", "\"uniform\"");
  ASSERT_TRUE(i64.ok());
  EXPECT_EQ(ResolveFill(i64->arguments(0).buffer()).b, 2147483647.0);

  auto normal = WithBuffer("u8", "in", "\"normal\"");
  ASSERT_TRUE(normal.ok());
  d = Draws(normal->arguments(0).buffer(), 20000);
  EXPECT_GE(*std::min_element(d.begin(), d.end()), 0);
  EXPECT_LE(*std::max_element(d.begin(), d.end()), 255);
  double mean = 0;
  for (double v : d) mean += v / d.size();
  EXPECT_NEAR(mean, 128, 2);
  auto wide = WithBuffer("u8", "in", "{ normal = [0, 1000] }");  // clamped to 0..255
  ASSERT_TRUE(wide.ok());
  d = Draws(wide->arguments(0).buffer(), 1000);
  EXPECT_EQ(*std::min_element(d.begin(), d.end()), 0);
  EXPECT_EQ(*std::max_element(d.begin(), d.end()), 255);

  auto f32 = WithBuffer("f32", "in", "");
  ASSERT_TRUE(f32.ok());
  d = Draws(f32->arguments(0).buffer(), 1000);
  EXPECT_GE(*std::min_element(d.begin(), d.end()), -1);
  EXPECT_LT(*std::max_element(d.begin(), d.end()), 1);
  EXPECT_NE(d[0], std::floor(d[0]));
  auto f32_range = WithBuffer("f32", "in", "{ uniform = [2.5, 3] }");
  ASSERT_TRUE(f32_range.ok());
  d = Draws(f32_range->arguments(0).buffer(), 1000);
  EXPECT_GE(*std::min_element(d.begin(), d.end()), 2.5);
  EXPECT_LT(*std::max_element(d.begin(), d.end()), 3);

  auto out = WithBuffer("f32", "out", "");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ResolveFill(out->arguments(0).buffer()).fill, v1::SPEC_FILL_ZEROS);
  d = Draws(out->arguments(0).buffer(), 10);
  EXPECT_EQ(std::set<double>(d.begin(), d.end()), std::set<double>{0});

  // The JSON form of a range.
  auto json = ParseSpecJson(R"({"arguments": [{"name": "x", "type": "u8", "size": "n", "role": "in",
                                                 "fill": {"uniform": [0, 255]}}]})");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->arguments(0).buffer().fill_parameters_size(), 2);
}

TEST(Fill, BadFillsAndResetsAreRefusedNamingTheField) {
  struct Bad {
    std::string type, role, fill, reset;
    std::vector<std::string> parts;
  };
  for (const Bad& c : std::vector<Bad>{
           {"u8", "in", "{ uniform = [0, 256] }", "", {"arguments[0].fill", "256", "0 to 255"}},
           {"u8", "in", "{ uniform = [-1, 3] }", "", {"arguments[0].fill", "-1"}},
           {"i32", "in", "{ uniform = [1.5, 3] }", "", {"arguments[0].fill", "1.5", "not an integer"}},
           {"i32", "in", "{ uniform = [3, 1] }", "", {"arguments[0].fill", "low is over high"}},
           {"f32", "in", "{ uniform = [1, 1] }", "", {"arguments[0].fill", "low is not under high"}},
           {"f32", "in", "{ normal = [0, -1] }", "", {"arguments[0].fill", "deviation -1 is negative"}},
           {"f32", "in", "{ uniform = [0] }", "", {"arguments[0].fill.uniform", "[low, high]"}},
           {"f32", "in", "{ poisson = [1, 2] }", "", {"arguments[0].fill", "uniform = [low, high]"}},
           {"f32", "in", "\"uniform\"", "\"every_run\"", {"arguments[0].reset", "only outputs"}},
           {"f32", "out", "\"zeros\"", "\"always\"", {"arguments[0].reset", "every_run"}},
       }) {
    SCOPED_TRACE(c.fill + " " + c.reset);
    auto s = WithBuffer(c.type, c.role, c.fill, c.reset);
    ExpectInvalid(s.ok() ? ValidateSpec(*s) : s.status(), c.parts);
  }
}

// When an output goes back to its fill: before each verification only by
// default; before every timed run too with reset = "every_run" (the
// histogram's accumulating counts). What the worker's SpecProblem resets.
TEST(Reset, AnAccumulatingOutputIsResetBeforeEveryRunWhereItSaysSo) {
  auto every = WithBuffer("i32", "inout", "\"zeros\"", "\"every_run\"");
  ASSERT_TRUE(every.ok()) << every.status();
  ASSERT_TRUE(ValidateSpec(*every).ok()) << ValidateSpec(*every);
  EXPECT_EQ(every->arguments(0).buffer().reset(), v1::SPEC_RESET_EVERY_RUN);
  EXPECT_TRUE(ResetsEveryRun(every->arguments(0).buffer()));
  EXPECT_FALSE(ResetsEveryRun(every->arguments(1).buffer()));  // y: no reset key
  auto verification = WithBuffer("i32", "inout", "\"zeros\"", "\"verification\"");
  ASSERT_TRUE(verification.ok());
  EXPECT_FALSE(ResetsEveryRun(verification->arguments(0).buffer()));
  auto unset = WithBuffer("i32", "out", "\"zeros\"");
  ASSERT_TRUE(unset.ok());
  EXPECT_FALSE(ResetsEveryRun(unset->arguments(0).buffer()));

  auto histogram = LoadSpecFile(std::string(TUNED_EXAMPLES_DIR) + "/histogram/spec.toml");
  ASSERT_TRUE(histogram.ok()) << histogram.status();
  ASSERT_EQ(histogram->arguments(1).name(), "counts");
  EXPECT_TRUE(ResetsEveryRun(histogram->arguments(1).buffer()));
  EXPECT_FALSE(ResetsEveryRun(histogram->arguments(0).buffer()));  // x, an input
  EXPECT_EQ(ResolveFill(histogram->arguments(1).buffer()).fill, v1::SPEC_FILL_ZEROS);
  auto reduction = LoadSpecFile(std::string(TUNED_EXAMPLES_DIR) + "/reduction/spec.toml");
  ASSERT_TRUE(reduction.ok()) << reduction.status();
  EXPECT_FALSE(ResetsEveryRun(reduction->arguments(1).buffer()));  // out: reset before verification
}

// examples/kernels/: each spec loads, validates, and enumerates.
struct Example {
  std::string dir;
  size_t space;  // EnumerateSpace(spec): restrictions over parameters only
  Dims dims;
  size_t at_dims;
};

TEST(Examples, LoadValidateEnumerate) {
  const std::vector<Example> examples = {
      {"matmul", 6, {{"m", 1000}, {"n", 1000}, {"k", 1000}}, 2},
      {"reduction", 71, {{"n", 1000003}}, 25},
      {"stencil", 54, {{"w", 4096}, {"h", 4096}}, 54},
      {"softmax", 18, {{"rows", 4096}, {"cols", 30}}, 3},
      {"histogram", 102, {{"n", 1000003}}, 102},
  };
  for (const Example& e : examples) {
    SCOPED_TRACE(e.dir);
    auto spec = LoadSpecFile(std::string(TUNED_EXAMPLES_DIR) + "/" + e.dir + "/spec.toml");
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_NE(spec->source().find("__global__"), std::string::npos);
    ASSERT_TRUE(ValidateSpec(*spec).ok()) << ValidateSpec(*spec);
    auto space = EnumerateSpace(*spec);
    ASSERT_TRUE(space.ok()) << space.status();
    EXPECT_EQ(space->size(), e.space);
    auto at = EnumerateSpace(*spec, e.dims);
    ASSERT_TRUE(at.ok()) << at.status();
    EXPECT_EQ(at->size(), e.at_dims);
    ASSERT_TRUE(ValidateProblem(*spec, e.dims).ok()) << ValidateProblem(*spec, e.dims);
    for (const Config& c : *at) {
      auto l = EvaluateLaunch(*spec, c, e.dims);
      ASSERT_TRUE(l.ok()) << l.status();
      EXPECT_GE(l->kernel.grid.x, 1);
    }
  }
}

}  // namespace
}  // namespace tuned::spec
