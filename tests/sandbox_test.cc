// The worker's sandbox (server/worker/sandbox.h). Each escape is tried
// twice: in a confined process, where it must fail, and unconfined, where
// it must work, so that a test passes only because the sandbox stopped it.
// - EnterSandbox itself, in a forked child: files, another process's
//   environment, TCP and signals.
// - The real `tuned-worker --compile-only`, through WorkerClient: a kernel
//   whose source includes a host file by path, its own /proc entry or its
//   stdio (the daemon's include check, families/spec/includes.cc, is not in
//   this path, so the spellings that once passed it are tried too), and the
//   secret must be in no answer: not in the environment (a canary
//   NVIDIA_API_KEY), not in the log a failed compile returns (what the daemon
//   stores as a measurement's message).
// Both with Landlock and with the mount namespace of a host without it
// (EnterMountNamespace; the worker's --sandbox mount-namespace).
#include "server/worker/sandbox.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/worker_client.h"

extern char** environ;

namespace tuned {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSecret = "tuned_sandbox_secret_5f3a9c";

/// How a child confines itself: EnterSandbox (Landlock) or EnterMountNamespace.
enum class Kind { kLandlock, kMountNamespace };

/// Whether this host lets a process make a user namespace (a forked child tries).
bool HasUserNamespaces() {
  const pid_t pid = fork();
  if (pid == 0) _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// A process holding the secret in its environment, as a daemon holds
/// TUNED_DB's password; killed at the end.
class SecretHolder {
 public:
  SecretHolder() {
    const std::string var = std::string("TUNED_DB=postgresql://tuned:") + kSecret + "@db/tuned";
    const char* argv[] = {"sleep", "600", nullptr};
    const char* envp[] = {var.c_str(), nullptr};
    if (posix_spawnp(&pid_, "sleep", nullptr, nullptr, const_cast<char* const*>(argv),
                     const_cast<char* const*>(envp)) != 0) {
      pid_ = -1;
    }
  }
  ~SecretHolder() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

class SandboxTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::kLandlock && !HasLandlock()) {
      GTEST_SKIP() << "this kernel has no Landlock: its compilers enter a mount namespace";
    }
    if (GetParam() == Kind::kMountNamespace && !HasUserNamespaces()) {
      GTEST_SKIP() << "this host has no unprivileged user namespaces: no mount namespace either";
    }
    dir_ = fs::temp_directory_path() / ("tuned_sandbox_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "token") << "alice:" << kSecret << " register\n";
    std::ofstream(dir_ / "secret.h") << "this is " << kSecret << " to be leaked\n";
    fs::create_symlink(dir_ / "secret.h", dir_ / "link.h");
    ASSERT_GT(holder_.pid(), 0);
    // A descriptor on a host file that a child inherits, as a worker once
    // inherited the daemon's log file as its stderr.
    secret_fd_ = open((dir_ / "secret.h").c_str(), O_RDONLY);
    ASSERT_GE(secret_fd_, 0);
  }
  void TearDown() override {
    close(secret_fd_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path dir_;
  SecretHolder holder_;
  int secret_fd_ = -1;
};

/// The errno of each attempt, run in a child that first enters the sandbox
/// of `kind` when `confined`; -1 where the child could not report.
std::vector<int> TryInChild(bool confined, Kind kind,
                            const std::vector<std::function<int()>>& attempts) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::vector<int> out;
    if (confined &&
        !(kind == Kind::kLandlock ? EnterSandbox({}, SandboxRole::kCompiler) : EnterMountNamespace({})).ok()) {
      _exit(2);
    }
    for (const auto& attempt : attempts) out.push_back(attempt());
    const ssize_t n = write(fds[1], out.data(), out.size() * sizeof(int));
    _exit(n == static_cast<ssize_t>(out.size() * sizeof(int)) ? 0 : 3);
  }
  close(fds[1]);
  std::vector<int> out(attempts.size(), -1);
  const ssize_t n = read(fds[0], out.data(), out.size() * sizeof(int));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (n != static_cast<ssize_t>(out.size() * sizeof(int))) return std::vector<int>(attempts.size(), -1);
  return out;
}

/// 0 if `path` opens for reading, else errno.
int OpenErrno(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return errno;
  std::fclose(f);
  return 0;
}

// Landlock refuses (EACCES) what the namespace does not have (ENOENT; no
// network: ENETUNREACH; a read-only root: EROFS); the namespace leaves
// other processes of the user signallable, which only Landlock's scope stops.
TEST_P(SandboxTest, AConfinedProcessReadsTheLibrariesAndNoFileOfTheHost) {
  // A TCP listener that the child tries to reach.
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string environ_path = "/proc/" + std::to_string(holder_.pid()) + "/environ";
  const std::vector<std::pair<std::string, std::function<int()>>> attempts = {
      {"/usr/include/stdio.h", [] { return OpenErrno("/usr/include/stdio.h"); }},
      {"/proc/cpuinfo", [] { return OpenErrno("/proc/cpuinfo"); }},
      {"/etc/passwd", [] { return OpenErrno("/etc/passwd"); }},
      {"its own /proc/self/environ", [] { return OpenErrno("/proc/self/environ"); }},
      {"its own /proc/self/cmdline", [] { return OpenErrno("/proc/self/cmdline"); }},
      {"its own /proc/self/mountinfo", [] { return OpenErrno("/proc/self/mountinfo"); }},
      {"an inherited file by /proc/self/fd/N",
       [&] { return OpenErrno("/proc/self/fd/" + std::to_string(secret_fd_)); }},
      {"the token file", [&] { return OpenErrno((dir_ / "token").string()); }},
      {"a symlink to it", [&] { return OpenErrno((dir_ / "link.h").string()); }},
      {"a .. path to it", [&] { return OpenErrno("/usr/../" + (dir_ / "token").string()); }},
      {"another process's environ", [&] { return OpenErrno(environ_path); }},
      {"a TCP connect",
       [&] {
         const int s = socket(AF_INET, SOCK_STREAM, 0);
         const int r = connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
         const int e = r == 0 ? 0 : errno;
         close(s);
         return e;
       }},
      {"a signal to another process", [&] { return kill(holder_.pid(), 0) == 0 ? 0 : errno; }},
      {"a new file",
       [&] {
         std::FILE* f = std::fopen((dir_ / "new").c_str(), "w");
         if (f == nullptr) return errno;
         std::fclose(f);
         return 0;
       }},
  };
  std::vector<std::function<int()>> calls;
  for (const auto& a : attempts) calls.push_back(a.second);
  const std::vector<int> free = TryInChild(false, GetParam(), calls);
  const std::vector<int> confined = TryInChild(true, GetParam(), calls);
  close(listener);
  ASSERT_EQ(confined.size(), attempts.size());
  const bool landlock = GetParam() == Kind::kLandlock;
  for (size_t i = 0; i < attempts.size(); ++i) {
    SCOPED_TRACE(attempts[i].first);
    EXPECT_EQ(free[i], 0) << "unconfined, it works: " << std::strerror(free[i]);
    const std::string& what = attempts[i].first;
    if (i < 2) {
      EXPECT_EQ(confined[i], 0) << std::strerror(confined[i]);
    } else if (what == "a signal to another process") {
      EXPECT_EQ(confined[i], landlock ? EPERM : 0);
    } else if (landlock) {
      EXPECT_EQ(confined[i], EACCES) << std::strerror(confined[i]);
    } else if (what == "a TCP connect") {
      EXPECT_EQ(confined[i], ENETUNREACH) << std::strerror(confined[i]);
    } else {
      EXPECT_EQ(confined[i], ENOENT) << std::strerror(confined[i]);
    }
  }
}

/// The answers of the real worker to one compile of a kernel whose source
/// starts with `include`, all text that came back.
std::string CompileIncluding(const std::string& include, bool confined, Kind kind,
                             const std::vector<std::string>& options = {},
                             const std::vector<std::string>& worker_args = {}) {
  std::vector<std::string> args = {"--compile-only", "--arch", "90"};
  args.insert(args.end(), worker_args.begin(), worker_args.end());
  if (!confined) args.push_back("--no-sandbox");
  if (kind == Kind::kMountNamespace) args.insert(args.end(), {"--sandbox", "mount-namespace"});
  auto compiler = WorkerClient::Start(TUNED_WORKER_PATH, args, "compiler");
  if (!compiler.ok()) return "cannot start: " + compiler.status().ToString();
  v1::worker::Request request;
  v1::worker::Kernel* k = request.mutable_compile()->add_kernels();
  k->set_name("leak");
  k->set_source(include + "\n__global__ void leak(float* x) { x[threadIdx.x] = 1.f; }\n");
  k->set_name_expression("leak");
  for (const std::string& o : options) k->add_options(o);
  auto response = (*compiler)->Call(request, absl::Minutes(2));
  if (!response.ok()) return response.status().ToString();
  return response->DebugString();
}

TEST_P(SandboxTest, TheWorkersCompileIncludesNoFileOfTheHost) {
  const Kind kind = GetParam();
  std::vector<std::string> args = {"--compile-only", "--arch", "90"};
  if (kind == Kind::kMountNamespace) args.insert(args.end(), {"--sandbox", "mount-namespace"});
  auto started = WorkerClient::Start(TUNED_WORKER_PATH, args, "compiler");
  ASSERT_TRUE(started.ok()) << started.status();
  if (kind == Kind::kLandlock) {
    EXPECT_EQ((*started)->sandbox().rfind("Landlock ABI ", 0), 0u) << (*started)->sandbox();
  } else {
    EXPECT_EQ((*started)->sandbox(), "mount namespace");
  }
  const std::string environ_path = "/proc/" + std::to_string(holder_.pid()) + "/environ";
  for (const std::string& include :
       {"#include \"" + (dir_ / "secret.h").string() + "\"",
        "#include <" + (dir_ / "link.h").string() + ">",
        "#include \"/usr/../" + (dir_ / "secret.h").string() + "\"",
        "#include \"" + (dir_ / "token").string() + "\"",
        "#include \"" + environ_path + "\"", std::string("#include \"/etc/passwd\"")}) {
    SCOPED_TRACE(include);
    const std::string free = CompileIncluding(include, false, kind);
    const std::string confined = CompileIncluding(include, true, kind);
    // Unconfined, NVRTC reads the file, and the diagnostics that quote it
    // are cut from the log (OwnDiagnostics); confined, it cannot open it,
    // in the same words whether the path is missing or denied.
    EXPECT_NE(free.find("about another file than the kernel"), std::string::npos) << free;
    for (const std::string& answer : {free, confined}) {
      EXPECT_EQ(answer.find(kSecret), std::string::npos) << answer;
      EXPECT_EQ(answer.find("root:"), std::string::npos) << answer;
      EXPECT_NE(answer.find("MEASUREMENT_COMPILE_ERROR"), std::string::npos) << answer;
    }
    const std::string path = include.substr(include.find_first_of("\"<") + 1,
                                            include.find_last_of("\">") - include.find_first_of("\"<") - 1);
    EXPECT_NE(confined.find("cannot open source file \\\"" + path + "\\\"\\n"), std::string::npos)
        << confined;
  }
  // The CUDA headers by name still compile.
  const std::string ok = CompileIncluding(
      "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <mma.h>\n#include <cuda/std/cstdint>", true,
      kind);
  EXPECT_NE(ok.find("MEASUREMENT_COMPILED"), std::string::npos) << ok;
}

// A compiler's own /proc entry and stdio, with a canary NVIDIA_API_KEY in
// the environment the worker starts from and a host file as this process's
// stderr (a daemon's log): none is readable by #include, whatever spelling
// brings the include past a hand-written lexer.
TEST_P(SandboxTest, ACompilersOwnProcEntryAndStdioAreNotReadable) {
  const Kind kind = GetParam();
  const std::string canary = std::string("nvapi-") + kSecret;
  ASSERT_EQ(setenv("NVIDIA_API_KEY", canary.c_str(), 1), 0);
  const int saved_stderr = dup(STDERR_FILENO);
  ASSERT_GE(saved_stderr, 0);
  ASSERT_GE(dup2(secret_fd_, STDERR_FILENO), 0);  // the workers start with it as this process's stderr
  const std::string environ_include = "#include \"/proc/self/environ\"";
  const std::vector<std::string> sources = {
      environ_include,
      "#include \"/proc/self/cmdline\"",
      "#include \"/proc/self/mountinfo\"",
      "#include \"/proc/self/fd/2\"",
      "#include \"/dev/stderr\"",
      // What once passed the include check: a raw string, a digit separator,
      // a splice after a backslash in a string literal.
      "const char* r = R\"a(\"/*)a\";\n" + environ_include + "\n// */",
      "int x = 1'0; const char* s = \"a'/*\";\n" + environ_include + "\n// */",
      "const char* s = \"a\\\\\n/* \";\n" + environ_include + "\n*/",
  };
  std::vector<std::string> answers;
  for (const std::string& source : sources) answers.push_back(CompileIncluding(source, true, kind));
  dup2(saved_stderr, STDERR_FILENO);
  close(saved_stderr);
  unsetenv("NVIDIA_API_KEY");
  for (size_t i = 0; i < sources.size(); ++i) {
    SCOPED_TRACE(sources[i]);
    EXPECT_EQ(answers[i].find(kSecret), std::string::npos) << answers[i];
    EXPECT_EQ(answers[i].find("NVIDIA_API_KEY"), std::string::npos) << answers[i];
    EXPECT_EQ(answers[i].find("--compile-only"), std::string::npos) << answers[i];  // cmdline
    EXPECT_EQ(answers[i].find(" - "), std::string::npos) << answers[i];  // a mountinfo line
    EXPECT_NE(answers[i].find("MEASUREMENT_COMPILE_ERROR"), std::string::npos) << answers[i];
    // The sandbox stopped the read, not only the log's filter.
    EXPECT_NE(answers[i].find("cannot open source file"), std::string::npos) << answers[i];
  }
}

// What the daemon stores of a failed compile (a measurement's message): the
// include sits under an #if that only the swept config takes, so that the
// registration's compile of another config passes. Confined or not, the
// secret is not in it: the sandbox stops the read, and the log keeps only
// the diagnostics of the kernel's own lines.
TEST_P(SandboxTest, TheStoredMessageOfAFailedCompileHoldsNoOtherFile) {
  const std::string source = "#if BLOCK == 128\n#include \"" + (dir_ / "secret.h").string() + "\"\n#endif";
  for (bool confined : {false, true}) {
    SCOPED_TRACE(confined ? "confined" : "unconfined");
    const std::string answer = CompileIncluding(source, confined, GetParam(), {"-DBLOCK=128"});
    EXPECT_EQ(answer.find(kSecret), std::string::npos) << answer;
    EXPECT_NE(answer.find("MEASUREMENT_COMPILE_ERROR"), std::string::npos) << answer;
    EXPECT_NE(answer.find(confined ? "cannot open source file" : "another file than the kernel"),
              std::string::npos)
        << answer;
  }
  // Another config compiles: the include is not reached.
  EXPECT_NE(CompileIncluding(source, true, GetParam(), {"-DBLOCK=64"}).find("MEASUREMENT_COMPILED"),
            std::string::npos);
}

// A compile's memory and CPU time are bounded (CompileLimits, small limits
// here to keep it fast): a preprocessor bomb (10^8 tokens) fails naming the
// config and the limit, in a streamed compile as the kernel's result, and
// the compiler exits; the kernel beside it is compiled again by the caller.
TEST_P(SandboxTest, ACompileBombIsStoppedAtItsLimit) {
  std::string bomb = "#define X1 1+1+1+1+1+1+1+1+1+1\n";
  for (int i = 2; i <= 8; ++i) {
    bomb += "#define X" + std::to_string(i) + " ";
    for (int j = 0; j < 10; ++j) bomb += (j > 0 ? "+X" : "X") + std::to_string(i - 1);
    bomb += "\n";
  }
  bomb += "__device__ long v = X8;";
  const auto t0 = std::chrono::steady_clock::now();
  const std::string memory = CompileIncluding(bomb, true, GetParam(), {},
                                              {"--compile-memory-mib", "256", "--compile-cpu-seconds", "0"});
  EXPECT_NE(memory.find("compile of leak exceeded 256 MiB of memory"), std::string::npos) << memory;
  const std::string cpu = CompileIncluding(bomb, true, GetParam(), {},
                                           {"--compile-memory-mib", "0", "--compile-cpu-seconds", "1"});
  EXPECT_NE(cpu.find("compile of leak exceeded 1 s of CPU time"), std::string::npos) << cpu;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60);

  // Streamed, beside a kernel that compiles: the bomb's answer is its result.
  std::vector<std::string> args = {"--compile-only", "--arch", "90", "--compile-memory-mib", "256"};
  if (GetParam() == Kind::kMountNamespace) args.insert(args.end(), {"--sandbox", "mount-namespace"});
  auto compiler = WorkerClient::Start(TUNED_WORKER_PATH, args, "compiler");
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  v1::worker::Request request;
  request.mutable_compile()->set_stream(true);
  for (const std::string& source : {bomb, std::string()}) {
    v1::worker::Kernel* k = request.mutable_compile()->add_kernels();
    k->set_name(source.empty() ? "fine" : "bomb_config");
    k->set_source(source + "\n__global__ void leak(float* x) { x[threadIdx.x] = 1.f; }\n");
    k->set_name_expression("leak");
  }
  std::map<int, v1::worker::MeasureResult> partial;
  auto response = (*compiler)->CallStreaming(request, absl::Minutes(2), [&](const v1::worker::CompiledOne& one) {
    partial[one.index()] = one.result();
  });
  ASSERT_TRUE(partial.contains(0));
  EXPECT_EQ(partial[0].status(), v1::MEASUREMENT_COMPILE_ERROR);
  EXPECT_EQ(partial[0].message(), "compile of bomb_config exceeded 256 MiB of memory");
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();  // it exited
  EXPECT_FALSE((*compiler)->alive());
}

INSTANTIATE_TEST_SUITE_P(Kinds, SandboxTest,
                         ::testing::Values(Kind::kLandlock, Kind::kMountNamespace),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return info.param == Kind::kLandlock ? "Landlock" : "MountNamespace";
                         });

}  // namespace
}  // namespace tuned
