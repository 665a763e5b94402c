#include "core/paths.h"

#include <unistd.h>

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

}  // namespace tuned
