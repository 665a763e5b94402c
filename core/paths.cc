#include "core/paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace tuned {
namespace {
std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}
}  // namespace

std::string DefaultSocketPath(int gpu) {
  std::string dir = Env("XDG_RUNTIME_DIR");
  dir = dir.empty() ? absl::StrCat("/tmp/tuned-", getuid()) : absl::StrCat(dir, "/tuned");
  return absl::StrCat(dir, "/gpu", gpu, ".sock");
}

std::string DefaultDbPath(int gpu) {
  std::string dir = Env("XDG_STATE_HOME");
  if (dir.empty()) {
    const std::string home = Env("HOME");
    dir = absl::StrCat(home.empty() ? "/tmp" : home, "/.local/state");
  }
  return absl::StrCat(dir, "/tuned/gpu", gpu, ".db");
}

absl::Status CheckSecretFile(const std::string& path, absl::string_view what) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return absl::NotFoundError(absl::StrCat("cannot read ", what, " ", path));
  const mode_t open_bits = st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP | S_IXOTH);
  if (open_bits == 0) return absl::OkStatus();
  char mode[8];
  snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return absl::PermissionDeniedError(absl::StrCat(
      what, " ", path, " is ", (st.st_mode & (S_IROTH | S_IXOTH)) != 0 ? "open to" : "writable by",
      " others (mode ", mode, "): chmod o-rwx,g-w ", path, " (as ssh asks of a private key)"));
}

}  // namespace tuned
