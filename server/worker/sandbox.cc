// Landlock through its three system calls: no Debian package wraps them for
// C or C++ (the wrappers are Rust and Go crates), and the ABI is small. The
// namespaces through unshare, mount and pivot_root: bubblewrap does the same
// as a program (a setuid one on some hosts), not as a library, and a
// compiler process enters them itself before its first thread.
#include "server/worker/sandbox.h"

#include <fcntl.h>
#include <glob.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"

namespace tuned {
namespace {

// The kernel's ABI (include/uapi/linux/landlock.h of Linux 6.12), declared
// here because a distribution's header may predate the later rights.
constexpr uint64_t kFsExecute = 1ULL << 0;
constexpr uint64_t kFsWriteFile = 1ULL << 1;
constexpr uint64_t kFsReadFile = 1ULL << 2;
constexpr uint64_t kFsReadDir = 1ULL << 3;
constexpr uint64_t kFsRemoveFile = 1ULL << 5;
constexpr uint64_t kFsMakeReg = 1ULL << 8;
constexpr uint64_t kFsAbi1 = (1ULL << 13) - 1;  // EXECUTE .. MAKE_SYM
constexpr uint64_t kFsRefer = 1ULL << 13;       // ABI 2
constexpr uint64_t kFsTruncate = 1ULL << 14;    // ABI 3
constexpr uint64_t kFsIoctlDev = 1ULL << 15;    // ABI 5
constexpr uint64_t kNetBindTcp = 1ULL << 0;     // ABI 4
constexpr uint64_t kNetConnectTcp = 1ULL << 1;  // ABI 4
constexpr uint64_t kScopeSignal = 1ULL << 1;    // ABI 6
// The rights a rule on a file (not a folder) may carry.
constexpr uint64_t kFileRights = kFsExecute | kFsWriteFile | kFsReadFile | kFsTruncate | kFsIoctlDev;

struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;  // ABI 4
  uint64_t scoped = 0;              // ABI 6
};

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access = 0;
  int32_t parent_fd = -1;
};

constexpr uint64_t kRead = kFsReadFile | kFsReadDir;
constexpr uint64_t kReadWrite = kRead | kFsWriteFile | kFsTruncate | kFsIoctlDev;
constexpr uint64_t kScratch = kReadWrite | kFsMakeReg | kFsRemoveFile;

struct Rule {
  std::string path;
  uint64_t access;
};

// The folders of the files this process has mapped (its libraries and
// executable), from /proc/self/maps; the NVRTC builtins and cuBLAS's parts
// are loaded from beside them later.
std::set<std::string> LoadedFolders() {
  std::set<std::string> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find(" /");
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash + 1);
    if (path.ends_with(" (deleted)")) continue;
    path = path.substr(0, path.rfind('/'));
    if (!path.empty()) out.insert(path);
  }
  return out;
}

std::vector<Rule> Rules(const std::vector<std::string>& also_read, SandboxRole role) {
  // Of /proc, the system's facts only; a compiler gets nothing of its own
  // entry (NVRTC opens no /proc file), the GPU worker the four files of it
  // that the driver and glibc read, never environ, cmdline, fd/, mountinfo.
  std::vector<Rule> rules = {
      {"/usr", kRead},           {"/lib", kRead},
      {"/lib64", kRead},         {"/lib32", kRead},
      {"/etc/ld.so.cache", kRead}, {"/etc/ld.so.conf", kRead},
      {"/etc/ld.so.conf.d", kRead}, {"/etc/localtime", kRead},
      {"/sys", kRead},           {"/proc/cpuinfo", kRead},
      {"/proc/meminfo", kRead},  {"/proc/stat", kRead},
      {"/dev/urandom", kRead},   {"/dev/random", kRead},
      {"/dev/null", kReadWrite},
  };
  if (role == SandboxRole::kGpuWorker) {
    for (const char* own : {"stat", "statm", "status", "maps"}) {
      rules.push_back({absl::StrCat("/proc/", getpid(), "/", own), kRead});
    }
    rules.push_back({"/proc/driver", kRead});
    rules.push_back({"/dev/shm", kScratch});
    glob_t g{};
    if (glob("/dev/nvidia*", 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) rules.push_back({g.gl_pathv[i], kReadWrite});
    }
    globfree(&g);
  }
  for (const std::string& folder : LoadedFolders()) rules.push_back({folder, kRead});
  for (const std::string& folder : also_read) rules.push_back({folder, kRead});
  if (const char* paths = std::getenv("LD_LIBRARY_PATH"); paths != nullptr) {
    const std::vector<std::string> folders = absl::StrSplit(paths, ':', absl::SkipEmpty());
    for (const std::string& p : folders) {
      if (p.starts_with('/')) rules.push_back({p, kRead});
    }
  }
  return rules;
}

absl::Status Errno(std::string_view what) {
  return absl::InternalError(absl::StrCat(std::string(what), ": ", std::strerror(errno)));
}

/// Writes `text` to the file at `path` (a /proc/self file of the namespace's map).
absl::Status WriteFile(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Errno(absl::StrCat("open ", path));
  const ssize_t n = write(fd, text.data(), text.size());
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) return Errno(absl::StrCat("write ", path));
  return absl::OkStatus();
}

/// mkdir -p of `path` (absolute).
absl::Status MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    const std::string part = path.substr(0, i);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return Errno(absl::StrCat("mkdir ", part));
  }
  return absl::OkStatus();
}

/// Binds `path` of the host at the same path under `root`, read-only unless
/// `writable`, keeping the flags a user namespace may not clear (nosuid,
/// nodev, noexec of the mount it comes from).
absl::Status BindInto(const std::string& root, const std::string& path, bool writable) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return absl::OkStatus();  // not on this host
  const std::string target = root + path;
  if (S_ISDIR(st.st_mode)) {
    TUNED_RETURN_IF_ERROR(MakeDirs(target));
  } else {
    TUNED_RETURN_IF_ERROR(MakeDirs(target.substr(0, target.rfind('/'))));
    const int fd = open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Errno(absl::StrCat("create ", target));
    close(fd);
  }
  if (mount(path.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return Errno(absl::StrCat("bind ", path));
  }
  if (writable) return absl::OkStatus();
  struct statvfs vfs {};
  unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY;
  if (statvfs(path.c_str(), &vfs) == 0) {
    if (vfs.f_flag & ST_NOSUID) flags |= MS_NOSUID;
    if (vfs.f_flag & ST_NODEV) flags |= MS_NODEV;
    if (vfs.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
    if (vfs.f_flag & ST_NOATIME) flags |= MS_NOATIME;
    if (vfs.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
    if (vfs.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  }
  if (mount(nullptr, target.c_str(), nullptr, flags, nullptr) != 0) {
    return Errno(absl::StrCat("read-only ", path));
  }
  return absl::OkStatus();
}

}  // namespace

bool HasLandlock() {
  return syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION) > 0;
}

absl::StatusOr<std::string> EnterMountNamespace(const std::vector<std::string>& also_read) {
  // What to bind, found before the host's files go: the rules' paths
  // (longest-lived first), each once and none beneath another.
  std::vector<Rule> rules = Rules(also_read, SandboxRole::kCompiler);
  std::sort(rules.begin(), rules.end(), [](const Rule& a, const Rule& b) { return a.path < b.path; });
  std::vector<Rule> binds;
  for (Rule& r : rules) {
    if (!binds.empty() && (r.path == binds.back().path || r.path.starts_with(binds.back().path + "/"))) {
      continue;  // inside a folder bound already
    }
    binds.push_back(std::move(r));
  }
  const uid_t uid = getuid();
  const gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) != 0) {
    if (errno == EPERM || errno == ENOSPC || errno == EUSERS || errno == EINVAL) {
      return absl::UnimplementedError(absl::StrCat(
          "no Landlock, and no user namespace for a mount namespace (", std::strerror(errno), ")"));
    }
    return Errno("unshare");
  }
  TUNED_RETURN_IF_ERROR(WriteFile("/proc/self/setgroups", "deny"));
  TUNED_RETURN_IF_ERROR(WriteFile("/proc/self/uid_map", absl::StrCat(uid, " ", uid, " 1")));
  TUNED_RETURN_IF_ERROR(WriteFile("/proc/self/gid_map", absl::StrCat(gid, " ", gid, " 1")));
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return Errno("make / private");
  // The new root: a tmpfs over /tmp (of this namespace only).
  const std::string root = "/tmp";
  if (mount("tuned-sandbox", root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0) {
    return Errno("tmpfs");
  }
  for (const Rule& r : binds) {
    TUNED_RETURN_IF_ERROR(BindInto(root, r.path, (r.access & kFsWriteFile) != 0));
  }
  TUNED_RETURN_IF_ERROR(MakeDirs(root + "/.old"));
  if (syscall(SYS_pivot_root, root.c_str(), (root + "/.old").c_str()) != 0) return Errno("pivot_root");
  if (chdir("/") != 0) return Errno("chdir /");
  if (umount2("/.old", MNT_DETACH) != 0) return Errno("umount the old root");
  if (rmdir("/.old") != 0) return Errno("rmdir /.old");
  if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
            nullptr) != 0) {
    return Errno("read-only root");
  }
  // No capability in the namespace from here on (its creator had them all).
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  if (syscall(SYS_capset, &header, none) != 0) return Errno("capset");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Errno("PR_SET_NO_NEW_PRIVS");
  return std::string("mount namespace");
}

absl::StatusOr<std::string> EnterSandbox(const std::vector<std::string>& also_read, SandboxRole role) {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 0) {
    if (errno == ENOSYS || errno == EOPNOTSUPP) {
      return absl::UnimplementedError(
          absl::StrCat("the kernel has no Landlock (", std::strerror(errno), ")"));
    }
    return Errno("landlock_create_ruleset");
  }
  RulesetAttr attr;
  attr.handled_access_fs = kFsAbi1 | (abi >= 2 ? kFsRefer : 0) | (abi >= 3 ? kFsTruncate : 0) |
                           (abi >= 5 ? kFsIoctlDev : 0);
  if (abi >= 4) attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
  if (abi >= 6) attr.scoped = kScopeSignal;
  const int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) return Errno("landlock_create_ruleset");
  absl::Status status;
  for (const Rule& rule : Rules(also_read, role)) {
    const int fd = open(rule.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;  // not on this host
    struct stat st {};
    PathBeneathAttr beneath;
    beneath.parent_fd = fd;
    beneath.allowed_access = rule.access & attr.handled_access_fs;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) beneath.allowed_access &= kFileRights;
    const long added = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
    close(fd);
    if (added != 0) {
      status = Errno(absl::StrCat("landlock_add_rule ", rule.path));
      break;
    }
  }
  if (status.ok() && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) status = Errno("PR_SET_NO_NEW_PRIVS");
  if (status.ok() && syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
    status = Errno("landlock_restrict_self");
  }
  close(ruleset);
  if (!status.ok()) return status;
  return absl::StrCat("Landlock ABI ", abi);
}

}  // namespace tuned
