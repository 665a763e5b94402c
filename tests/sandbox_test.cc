// The worker's sandbox (server/worker/sandbox.h). Each escape is tried
// twice: in a confined process, where it must fail, and unconfined, where
// it must work, so that a test passes only because the sandbox stopped it.
// - EnterSandbox itself, in a forked child: files, another process's
//   environment, TCP and signals.
// - The real `tuned-worker --compile-only`, through WorkerClient: a kernel
//   whose source includes a host file by path (the daemon's include check,
//   families/spec/includes.cc, is not in this path), and the secret must be
//   in no answer.
// Both with Landlock and with the mount namespace of a host without it
// (EnterMountNamespace; the worker's --sandbox mount-namespace).
#include "server/worker/sandbox.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path dir_;
  SecretHolder holder_;
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
        !(kind == Kind::kLandlock ? EnterSandbox({}) : EnterMountNamespace({})).ok()) {
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
      {"its own /proc/self/status", [] { return OpenErrno("/proc/self/status"); }},
      {"/etc/passwd", [] { return OpenErrno("/etc/passwd"); }},
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
std::string CompileIncluding(const std::string& include, bool confined, Kind kind) {
  std::vector<std::string> args = {"--compile-only", "--arch", "90"};
  if (!confined) args.push_back("--no-sandbox");
  if (kind == Kind::kMountNamespace) args.insert(args.end(), {"--sandbox", "mount-namespace"});
  auto compiler = WorkerClient::Start(TUNED_WORKER_PATH, args, "compiler");
  if (!compiler.ok()) return "cannot start: " + compiler.status().ToString();
  v1::worker::Request request;
  v1::worker::Kernel* k = request.mutable_compile()->add_kernels();
  k->set_name("leak");
  k->set_source(include + "\n__global__ void leak(float* x) { x[threadIdx.x] = 1.f; }\n");
  k->set_name_expression("leak");
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
    // Unconfined, NVRTC reads the file and its error quotes it.
    const bool passwd = include.find("passwd") != std::string::npos;
    EXPECT_NE(free.find(passwd ? "root" : kSecret), std::string::npos) << free;
    EXPECT_EQ(confined.find(kSecret), std::string::npos) << confined;
    EXPECT_EQ(confined.find("root:"), std::string::npos) << confined;
    EXPECT_NE(confined.find("MEASUREMENT_COMPILE_ERROR"), std::string::npos) << confined;
  }
  // The CUDA headers by name still compile.
  const std::string ok = CompileIncluding(
      "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <mma.h>\n#include <cuda/std/cstdint>", true,
      kind);
  EXPECT_NE(ok.find("MEASUREMENT_COMPILED"), std::string::npos) << ok;
}

INSTANTIATE_TEST_SUITE_P(Kinds, SandboxTest,
                         ::testing::Values(Kind::kLandlock, Kind::kMountNamespace),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return info.param == Kind::kLandlock ? "Landlock" : "MountNamespace";
                         });

}  // namespace
}  // namespace tuned
