#include "server/worker/compiler.h"

#include <dlfcn.h>
#include <malloc.h>
#include <nvrtc.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <atomic>
#include <chrono>
#include <mutex>
#include <list>
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

// The compiles running, for the limits' watchdog (SetCompileLimits).
struct Running {
  clockid_t cpu;     // the compiling thread's CPU clock
  double cpu_start;  // its reading when the compile began
  int index;
  std::string name;
};
std::mutex running_mu;
std::list<Running> running;  // guarded by running_mu
CompileLimits limits;        // set once, before any compile
thread_local int current_index = -1;        // CompileEach's source being compiled here
thread_local std::string current_name;      // and its name

/// The CPU clock `cpu`'s reading in seconds, or -1.
double CpuSeconds(clockid_t cpu) {
  timespec ts{};
  if (clock_gettime(cpu, &ts) != 0) return -1;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// Registers the calling thread's compile with the watchdog while it lives.
class RunningCompile {
 public:
  explicit RunningCompile(std::string_view name_expression) {
    if (!limits.exceeded) return;
    clockid_t cpu{};
    if (pthread_getcpuclockid(pthread_self(), &cpu) != 0) return;
    std::lock_guard<std::mutex> lock(running_mu);
    running.push_front({cpu, CpuSeconds(cpu), current_index,
                        current_name.empty() ? std::string(name_expression) : current_name});
    it_ = running.begin();
    registered_ = true;
  }
  ~RunningCompile() {
    if (!registered_) return;
    std::lock_guard<std::mutex> lock(running_mu);
    running.erase(it_);
  }
  RunningCompile(const RunningCompile&) = delete;
  RunningCompile& operator=(const RunningCompile&) = delete;

 private:
  std::list<Running>::iterator it_;
  bool registered_ = false;
};

/// "4 GiB", "256 MiB": `bytes` in the larger unit that divides it.
std::string Bytes(int64_t bytes) {
  if (bytes % (int64_t{1} << 30) == 0) return absl::StrCat(bytes >> 30, " GiB");
  return absl::StrCat(bytes >> 20, " MiB");
}

/// The watchdog's loop: never returns; exits the process past a limit.
void WatchLimits() {
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::string message;
    int index = -1;
    {
      std::lock_guard<std::mutex> lock(running_mu);
      if (running.empty()) continue;
      const Running* busiest = nullptr;
      double busiest_cpu = -1;
      for (const Running& r : running) {
        const double cpu = CpuSeconds(r.cpu) - r.cpu_start;
        if (cpu > busiest_cpu) {
          busiest_cpu = cpu;
          busiest = &r;
        }
      }
      if (busiest == nullptr) continue;
      if (limits.cpu_seconds > 0 && busiest_cpu > limits.cpu_seconds) {
        message = absl::StrCat("compile of ", busiest->name, " exceeded ", limits.cpu_seconds,
                               " s of CPU time");
      } else if (limits.memory_bytes > 0) {
        // Whose memory it is, the heap does not say: the compile that has
        // run longest holds the most of a bomb's.
        const struct mallinfo2 heap = mallinfo2();
        const int64_t used = static_cast<int64_t>(heap.uordblks + heap.hblkhd);
        if (used > limits.memory_bytes * static_cast<int64_t>(running.size())) {
          message = absl::StrCat("compile of ", busiest->name, " exceeded ", Bytes(limits.memory_bytes),
                                 " of memory");
        }
      }
      if (message.empty()) continue;
      index = busiest->index;
    }
    limits.exceeded(index, message);
    _exit(4);
  }
}

/// `status` with its message filtered by OwnDiagnostics (OK unchanged).
absl::Status WithOwnDiagnostics(const absl::Status& status) {
  if (status.ok()) return status;
  const auto message = status.message();
  return absl::Status(status.code(), OwnDiagnostics(std::string_view(message.data(), message.size())));
}

}  // namespace

std::string OwnDiagnostics(std::string_view log) {
  // A diagnostic starts "FILE(LINE): KIND: ..." and runs to the next one;
  // NVRTC names the program's own source kernel.cu (CompileOnce).
  static const std::regex kHeader(R"(^(.+)\((\d+)\): ([a-z ]+)(#[0-9A-Z-]+)?: (.*)$)");
  static const std::regex kNeutral(
      R"(^(\d+ (catastrophic )?errors? detected in the compilation of .*|Compilation terminated\.|)"
      R"(ptxas .*|attempt \d+: .*|NVRTC failed .*)$)");
  static const std::regex kCannotOpen(R"(^(.*cannot open source file "[^"]*").*$)");
  std::string out;
  bool keep = true;
  int cut = 0;
  for (std::string_view rest = log; !rest.empty();) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    // A quoted source line starts with blanks; the others are matched on
    // their start only (std::regex recurses per character).
    const std::string head(line.substr(0, line.starts_with(' ') ? 0 : 1024));
    std::smatch m;
    if (std::regex_match(head, m, kHeader)) {
      keep = m[1] == "kernel.cu";
      cut += !keep;
      if (keep && std::regex_match(head, m, kCannotOpen)) {
        // Whatever the reason a path was not read (missing, denied, not a
        // file), the same words: the log tells nothing of the host's files.
        absl::StrAppend(&out, m[1].str(), "\n");
        continue;
      }
    } else if (std::regex_match(head, kNeutral)) {
      keep = true;
    }
    if (keep) out.append(line).append(end == std::string_view::npos ? "" : "\n");
  }
  if (cut > 0) absl::StrAppend(&out, "(", cut, cut == 1 ? " diagnostic" : " diagnostics",
                               " about another file than the kernel's source cut)\n");
  return out;
}

void SetCompileLimits(CompileLimits set) {
  limits = std::move(set);
  if (limits.exceeded) std::thread(WatchLimits).detach();
}

absl::StatusOr<CompiledKernel> Compile(std::string_view source, std::string_view name_expression,
                                       const std::vector<std::string>& options,
                                       std::string_view arch) {
  const RunningCompile watched(name_expression);
  std::string earlier;  // the attempts that spilled
  double earlier_ms = 0;
  for (int attempt = 1;; ++attempt) {
    auto once = CompileOnce(source, {std::string(name_expression)}, options, arch);
    if (!once.ok()) return WithOwnDiagnostics(once.status());
    absl::StatusOr<CompiledKernel> k = std::move(once->front());
    if (k->spill_bytes <= 0 || attempt == kCompileAttemptsWhileSpilling) {
      k->log = OwnDiagnostics(absl::StrCat(earlier, k->log));
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
  const RunningCompile watched(name_expressions.front());
  auto out = CompileOnce(source, name_expressions, options, arch);
  if (!out.ok()) return WithOwnDiagnostics(out.status());
  for (CompiledKernel& k : *out) k.log = OwnDiagnostics(k.log);
  return out;
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
        current_index = static_cast<int>(i);
        current_name = sources[i].name;
        auto k = Compile(sources[i].source, sources[i].name_expression, sources[i].options, arch);
        current_index = -1;
        current_name.clear();
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
