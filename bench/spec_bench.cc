// A kernel spec's served kernel, checked and timed as a client runs it:
// for each problem, GetBest from the daemon, the kernel loaded
// with the client library (TunedKernel::Load) and launched on fresh buffers
// (TunedKernel::Launch), its outputs checked against the spec's reference
// (the worker's SpecProblem, a fresh seed), then timed interleaved with the
// default config compiled here (or, with --against, with the kernel another
// daemon serves for the same problem), both launched by TunedKernel::Launch
// on the same buffers, L2 flushed before each run (outputs with reset =
// "every_run" back to their fill before it), median of --rounds.
//
//   spec_bench --spec examples/kernels/softmax/spec.toml --problem 4096,1024 --problem 65536,100
//   spec_bench --family transpose --problems transpose_shapes.txt --against unix:/old.sock
//
// One line per problem, then
//   SUMMARY user_kernels specs=1 tuned=1 wrong_served=0 geomean_vs_default=<x> problems=<n>
// or, with --against, SUMMARY <--summary> vs_builtin=<geomean of against_ms / served_ms> shapes=<n>.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "families/kernel_text.h"
#include "families/spec/spec.h"
#include "families/spec_family.h"
#include "server/worker/compiler.h"
#include "server/worker/gpu.h"
#include "server/worker/problem.h"
#include "tuned/client.h"
#include "tuned/kernel.h"

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::vector<std::vector<int64_t>> ReadShapes(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<int64_t>> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::vector<int64_t> shape;
    for (int64_t d; s >> d;) shape.push_back(d);
    if (!shape.empty()) out.push_back(shape);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Checks and times kernel specs' served kernels as a client runs them");
  std::string spec_path, family_name, problems_file, address = tuned::DefaultServerAddress(), against;
  std::string summary = "transpose_as_spec";
  std::vector<std::string> problems;
  int rounds = 50;
  uint64_t seed = 20261125;
  app.add_option("--spec", spec_path, "spec file (TOML or JSON)");
  app.add_option("--family", family_name, "a built-in spec family instead (transpose)");
  app.add_option("--problem", problems, "a problem's dims, comma-separated (repeatable)");
  app.add_option("--problems", problems_file, "a file of problems, one per line, dims by spaces");
  app.add_option("--address", address, "the daemon");
  app.add_option("--against", against, "time against this daemon's served kernel, not the default config");
  app.add_option("--summary", summary, "the SUMMARY line's name with --against");
  app.add_option("--rounds", rounds, "interleaved rounds per problem");
  CLI11_PARSE(app, argc, argv);

  tuned::v1::KernelSpec spec;
  std::unique_ptr<tuned::SpecFamily> owned;
  const tuned::Family* family = nullptr;
  if (!spec_path.empty()) {
    auto loaded = tuned::spec::LoadSpecFile(spec_path);
    if (!loaded.ok()) return std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str()), 2;
    spec = *loaded;
    auto f = tuned::SpecFamily::Create(spec);
    if (!f.ok()) return std::fprintf(stderr, "%s\n", f.status().ToString().c_str()), 2;
    owned = *std::move(f);
    family = owned.get();
  } else {
    family = tuned::FindFamily(family_name);
    auto full = family != nullptr ? tuned::SpecWithSource(*family) : std::nullopt;
    if (!full) return std::fprintf(stderr, "no spec family %s\n", family_name.c_str()), 2;
    spec = *full;
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const std::string& p : problems) {
    std::vector<int64_t> shape;
    for (absl::string_view d : absl::StrSplit(p, ',')) shape.push_back(std::stoll(std::string(d)));
    shapes.push_back(shape);
  }
  if (!problems_file.empty()) {
    for (auto& s : ReadShapes(problems_file)) shapes.push_back(s);
  }

  tuned::Client client(address);
  std::unique_ptr<tuned::Client> other;
  if (!against.empty()) other = std::make_unique<tuned::Client>(against);
  auto device = tuned::OpenDevice(0);
  if (!device.ok()) return std::fprintf(stderr, "%s\n", device.status().ToString().c_str()), 1;
  auto flusher = tuned::L2Flusher::Create(device->l2_cache_bytes());
  if (!flusher.ok()) return std::fprintf(stderr, "%s\n", flusher.status().ToString().c_str()), 1;
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);

  int wrong = 0, done = 0;
  double log_sum = 0;
  for (const auto& shape : shapes) {
    const tuned::v1::Problem problem =
        family->id() != tuned::v1::FAMILY_UNSPECIFIED
            ? tuned::FamilyProblem(std::string(family->name()), shape)
            : tuned::FamilyProblem(spec.name(), shape);
    auto best = client.GetBest(problem);
    if (!best.ok()) {
      std::printf("%s %s: no best: %s\n", spec.name().c_str(), tuned::Family::ShapeString(shape).c_str(),
                  best.status().ToString().c_str());
      ++wrong;
      continue;
    }
    auto kernel = tuned::TunedKernel::Load(*best);
    auto prepared = tuned::MakeSpecProblem(spec, shape, seed, *device);
    if (!kernel.ok() || !prepared.ok()) {
      std::printf("%s %s: %s\n", spec.name().c_str(), tuned::Family::ShapeString(shape).c_str(),
                  (!kernel.ok() ? kernel.status() : prepared.status()).ToString().c_str());
      ++wrong;
      continue;
    }
    tuned::DeviceProblem& p = **prepared;
    // The caller's buffers, in the order of the buffer arguments.
    std::vector<void*> buffers;
    for (int i = 0; i < best->kernel_arguments_size(); ++i) {
      if (best->kernel_arguments(i).is_buffer()) buffers.push_back(*static_cast<void**>(p.KernelArgs()[i]));
    }
    auto served = [&](cudaStream_t s) { return kernel->Launch(buffers, s); };
    // Checked against the reference, as the worker checks a candidate.
    absl::Status s = p.PoisonOutput(stream);
    if (s.ok()) s = served(stream);
    auto error = s.ok() ? p.CheckOutput(stream) : absl::StatusOr<double>(s);
    const bool right = error.ok() && *error <= p.Tolerance();
    wrong += !right;
    // The yardstick, launched the same way (a TunedKernel, so that the
    // launch's own cost is alike): the default config (the problem's
    // baseline) compiled here, or the kernel another daemon serves.
    tuned::v1::BestKernel yard = *best;
    std::string yardstick_name;
    if (other != nullptr) {
      auto b = other->GetBest(problem);
      if (!b.ok()) return std::fprintf(stderr, "--against: %s\n", b.status().ToString().c_str()), 1;
      yard = *b;
      yard.clear_kernel_arguments();  // a daemon before kernel specs sends none: the same arguments
      *yard.mutable_kernel_arguments() = best->kernel_arguments();
      yard.set_use_baseline(false);
      yardstick_name = b->measurement().config().name();
    } else {
      const tuned::Family& f = *family;
      const tuned::Config def = f.DefaultConfig();
      if (def.empty()) return std::fprintf(stderr, "%s has no default config\n", spec.name().c_str()), 2;
      const tuned::KernelSource src = f.Source(def);
      auto compiled = tuned::Compile(tuned::SourceText(src), src.name_expression, src.options,
                                     "sm_" + std::to_string(device->cc_major()) + std::to_string(device->cc_minor()));
      if (!compiled.ok()) return std::fprintf(stderr, "default config: %s\n", compiled.status().ToString().c_str()), 1;
      yard.set_cubin(compiled->cubin);
      yard.set_ptx(compiled->ptx);
      yard.set_entry(compiled->entry);
      *yard.mutable_geometry() = f.Geometry(def, shape, *device);
      yard.set_use_baseline(false);
      yardstick_name = "default config " + f.ConfigName(def);
    }
    auto yard_kernel = tuned::TunedKernel::Load(yard);
    if (!yard_kernel.ok()) return std::fprintf(stderr, "%s\n", yard_kernel.status().ToString().c_str()), 1;
    auto yardstick = [&](cudaStream_t st) { return yard_kernel->Launch(buffers, st); };
    auto flush = [&](cudaStream_t st) { return flusher->Flush(st); };
    auto reset = [&](cudaStream_t st) { return p.BeforeTimedRun(st); };
    auto samples = tuned::TimeInterleavedSamplesMs({served, yardstick}, flush, rounds, stream, nullptr, reset);
    if (!samples.ok()) {
      std::printf("%s %s: timing: %s\n", spec.name().c_str(), tuned::Family::ShapeString(shape).c_str(),
                  samples.status().ToString().c_str());
      ++wrong;
      continue;
    }
    const double served_ms = Median((*samples)[0]), base_ms = Median((*samples)[1]);
    const double ratio = base_ms / served_ms;
    log_sum += std::log(ratio);
    ++done;
    const double work = family->Work(shape);
    std::printf("%s %s: served %s %.4f ms%s, %s %.4f ms, speedup %.3fx, error %.3g (%s)\n",
                spec.name().c_str(), tuned::Family::ShapeString(shape).c_str(),
                best->measurement().config().name().c_str(), served_ms,
                work > 0 ? (" (" + std::to_string(work / (served_ms * 1e6)) + " " +
                            std::string(family->metric_unit()) + ")").c_str()
                         : "",
                yardstick_name.c_str(), base_ms, ratio, error.ok() ? *error : -1.0, right ? "right" : "WRONG");
  }
  const double geomean = done > 0 ? std::exp(log_sum / done) : 0;
  if (other != nullptr) {
    std::printf("SUMMARY %s vs_builtin=%.3f shapes=%d wrong_served=%d\n", summary.c_str(), geomean, done, wrong);
  } else {
    std::printf("SUMMARY user_kernels specs=1 tuned=%d wrong_served=%d geomean_vs_default=%.3f problems=%d\n",
                done == static_cast<int>(shapes.size()) ? 1 : 0, wrong, geomean, done);
  }
  return wrong == 0 ? 0 : 3;
}
