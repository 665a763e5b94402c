#include "server/worker/compiler.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <atomic>
#include <chrono>
#include <mutex>
#include <regex>
#include <thread>

#include "absl/strings/str_cat.h"

namespace tuned {
namespace {

absl::Status NvrtcError(nvrtcResult r, std::string_view what) {
  return absl::InternalError(absl::StrCat(std::string(what), ": ", nvrtcGetErrorString(r)));
}

#define TUNED_NVRTC(expr)                                                   \
  do {                                                                      \
    if (nvrtcResult _r = (expr); _r != NVRTC_SUCCESS) return NvrtcError(_r, #expr); \
  } while (0)

// Owns an nvrtcProgram.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p != nullptr) nvrtcDestroyProgram(&p);
  }
};

// First integer captured by `re` in `log`, or `fallback`.
int ParseInt(std::string_view log, const std::regex& re, int fallback) {
  std::cmatch m;
  if (std::regex_search(log.data(), log.data() + log.size(), m, re)) return std::stoi(m[1].str());
  return fallback;
}

// One NVRTC run of `source` lowering every name expression: one result per
// expression, each with the program's cubin, PTX and log, its own entry, and
// the registers, spills and shared memory of its own entry's part of the
// ptxas log (never another kernel's of the same module).
absl::StatusOr<std::vector<CompiledKernel>> CompileOnce(
    std::string_view source, const std::vector<std::string>& name_expressions,
    const std::vector<std::string>& options, std::string_view arch) {
  const auto t0 = std::chrono::steady_clock::now();
  Program prog;
  const std::string src(source);
  const std::string what = name_expressions.size() == 1
                               ? name_expressions[0]
                               : absl::StrCat(name_expressions.size(), " instantiations");
  TUNED_NVRTC(nvrtcCreateProgram(&prog.p, src.c_str(), "kernel.cu", 0, nullptr, nullptr));
  for (const auto& expr : name_expressions) TUNED_NVRTC(nvrtcAddNameExpression(prog.p, expr.c_str()));

  // A source may name the arch-specific variant of the device's target
  // ("--gpu-architecture=sm_90a" for sm_90: sgemm's KIND 6, wgmma): it
  // replaces `arch`. Another target than `arch` or its "a" variant is
  // refused (a cubin for another GPU).
  std::string target(arch);
  std::vector<std::string> extra;
  for (const auto& o : options) {
    constexpr std::string_view kArchOption = "--gpu-architecture=";
    if (o.rfind(kArchOption, 0) != 0) {
      extra.push_back(o);
      continue;
    }
    const std::string wanted = o.substr(kArchOption.size());
    if (wanted != arch && wanted != absl::StrCat(std::string(arch), "a")) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, " is compiled for ", wanted, ", which is not the device's ", std::string(arch)));
    }
    target = wanted;
  }
  std::vector<std::string> opts = {absl::StrCat("--gpu-architecture=", target), "-std=c++17",
                                   "-Xptxas=-v"};
  static const std::vector<std::string> kIncludes = [] {
    std::vector<std::string> out;
    for (const std::string& dir : ToolkitIncludePaths()) out.push_back("--include-path=" + dir);
    return out;
  }();
  opts.insert(opts.end(), kIncludes.begin(), kIncludes.end());
  opts.insert(opts.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  const nvrtcResult compiled = nvrtcCompileProgram(prog.p, static_cast<int>(argv.size()), argv.data());

  CompiledKernel program;
  size_t log_size = 0;
  TUNED_NVRTC(nvrtcGetProgramLogSize(prog.p, &log_size));
  program.log.resize(log_size);
  TUNED_NVRTC(nvrtcGetProgramLog(prog.p, program.log.data()));
  while (!program.log.empty() && program.log.back() == '\0') program.log.pop_back();
  if (compiled != NVRTC_SUCCESS) {
    return absl::FailedPreconditionError(
        absl::StrCat("NVRTC failed to compile ", what, " (", nvrtcGetErrorString(compiled), "):\n",
                     program.log));
  }

  size_t size = 0;
  TUNED_NVRTC(nvrtcGetCUBINSize(prog.p, &size));
  program.cubin.resize(size);
  TUNED_NVRTC(nvrtcGetCUBIN(prog.p, program.cubin.data()));
  TUNED_NVRTC(nvrtcGetPTXSize(prog.p, &size));
  program.ptx.resize(size);
  TUNED_NVRTC(nvrtcGetPTX(prog.p, program.ptx.data()));
  while (!program.ptx.empty() && program.ptx.back() == '\0') program.ptx.pop_back();
  program.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  // ptxas -v, for each entry: "Compiling entry function '<entry>' for
  // 'sm_90'", then "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill
  // loads" and "Used 40 registers, used 1 barriers, 8448 bytes smem".
  static const std::regex kRegs(R"(Used (\d+) registers)");
  static const std::regex kSpill(R"((\d+) bytes spill stores)");
  static const std::regex kSmem(R"((\d+) bytes smem)");
  constexpr std::string_view kEntryMark = "Compiling entry function '";
  const std::string_view log = program.log;
  std::vector<CompiledKernel> out(name_expressions.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const char* lowered = nullptr;
    TUNED_NVRTC(nvrtcGetLoweredName(prog.p, name_expressions[i].c_str(), &lowered));
    CompiledKernel& k = out[i];
    k.entry = lowered;
    // Its own entry's part of the log, whatever else the module holds (a
    // spec's reference kernel, its other __global__ functions); the whole
    // log only where ptxas names no entry at all.
    std::string_view part;
    if (const size_t at = log.find(absl::StrCat(std::string(kEntryMark), k.entry, "'"));
        at != std::string_view::npos) {
      part = log.substr(at, log.find(kEntryMark, at + 1) - at);
    } else if (log.find(kEntryMark) == std::string_view::npos) {
      part = log;
    }
    k.registers = ParseInt(part, kRegs, -1);
    k.spill_bytes = ParseInt(part, kSpill, 0);
    k.static_smem_bytes = ParseInt(part, kSmem, 0);
  }
  // The program's cubin, PTX and log are every entry's: copied to all but
  // the last, which takes them (a single kernel's compile copies nothing).
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    out[i].cubin = program.cubin;
    out[i].ptx = program.ptx;
    out[i].log = program.log;
    out[i].compile_ms = program.compile_ms;
  }
  out.back().cubin = std::move(program.cubin);
  out.back().ptx = std::move(program.ptx);
  out.back().log = std::move(program.log);
  out.back().compile_ms = program.compile_ms;
  return out;
}

}  // namespace

absl::StatusOr<CompiledKernel> Compile(std::string_view source, std::string_view name_expression,
                                       const std::vector<std::string>& options,
                                       std::string_view arch) {
  std::string earlier;  // the attempts that spilled
  double earlier_ms = 0;
  for (int attempt = 1;; ++attempt) {
    auto once = CompileOnce(source, {std::string(name_expression)}, options, arch);
    if (!once.ok()) return once.status();
    absl::StatusOr<CompiledKernel> k = std::move(once->front());
    if (k->spill_bytes <= 0 || attempt == kCompileAttemptsWhileSpilling) {
      if (!earlier.empty()) k->log = absl::StrCat(earlier, k->log);
      k->compile_ms += earlier_ms;
      return k;
    }
    absl::StrAppend(&earlier, "attempt ", attempt, ": ptxas spilled ", k->spill_bytes,
                    " bytes; compiled again\n");
    earlier_ms += k->compile_ms;
  }
}

absl::StatusOr<std::vector<CompiledKernel>> CompileTogether(
    std::string_view source, const std::vector<std::string>& name_expressions,
    const std::vector<std::string>& options, std::string_view arch) {
  if (name_expressions.empty()) return std::vector<CompiledKernel>{};
  return CompileOnce(source, name_expressions, options, arch);
}

std::vector<absl::StatusOr<CompiledKernel>> CompileMany(const std::vector<CompileInput>& sources,
                                                        std::string_view arch, int threads) {
  std::vector<absl::StatusOr<CompiledKernel>> out(sources.size(),
                                                  absl::InternalError("not compiled"));
  CompileEach(sources, arch, threads,
              [&](size_t i, absl::StatusOr<CompiledKernel> k) { out[i] = std::move(k); });
  return out;
}

void CompileEach(const std::vector<CompileInput>& sources, std::string_view arch, int threads,
                 const CompileDone& done) {
  // `threads` workers each take the next source as soon as they are free: a
  // slow kernel holds up one worker, not the rest (compiling chunks of
  // `threads` waited for each chunk's slowest, about half of 16 cores idle
  // in the compile-ahead on the H100, bench/RESULTS.md regret7). In
  // index order, so that a caller who uses the results in order (a job's
  // measurements) gets the first ones first.
  std::atomic<size_t> next{0};
  std::mutex done_mu;  // one `done` call at a time
  std::vector<std::thread> workers;
  const size_t n = std::min(sources.size(), static_cast<size_t>(std::max(threads, 1)));
  for (size_t w = 0; w < n; ++w) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < sources.size(); i = next++) {
        auto k = Compile(sources[i].source, sources[i].name_expression, sources[i].options, arch);
        std::lock_guard<std::mutex> lock(done_mu);
        done(i, std::move(k));
      }
    });
  }
  for (auto& w : workers) w.join();
}

std::vector<std::string> ToolkitIncludePaths() {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code ec;
    const fs::path lib = fs::canonical(info.dli_fname, ec).parent_path();
    if (!ec) candidates = {lib.parent_path() / "include", lib.parent_path().parent_path() / "include"};
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* home = std::getenv(var); home != nullptr && *home != '\0') {
      candidates.push_back(fs::path(home) / "include");
    }
  }
  candidates.push_back("/usr/local/cuda/include");
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (!fs::exists(dir / "cuda_fp16.h", ec)) continue;
    std::vector<std::string> out = {fs::canonical(dir, ec).string()};
    if (fs::is_directory(dir / "cccl", ec)) out.push_back(fs::canonical(dir / "cccl", ec).string());
    return out;
  }
  return {};
}

std::string NvrtcVersion() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return absl::StrCat(major, ".", minor);
}

absl::Status CheckNoSpills(const CompiledKernel& k) {
  if (k.spill_bytes <= 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("rejected: ptxas spilled ", k.spill_bytes, " bytes of registers to local memory (",
                   k.registers, " registers per thread)"));
}

}  // namespace tuned
