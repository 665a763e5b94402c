// tunectl's command line (client/tunectl.h: RunTunectl): the input is its
// arguments, one per line. Every command that gets past the arguments dials
// a socket that does not exist and fails at once: nothing leaves the
// process. Arguments that name a device or a kernel file system (/dev,
// /proc, /sys: a file that never ends or blocks) are not tried.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "client/tunectl.h"
#include "fuzz/fuzz_util.h"

namespace {

constexpr size_t kMaxWords = 64;

const std::string& Dir() {
  static const std::string* dir = new std::string(tuned::fuzz::TempDir("tuned_tunectl"));
  return *dir;
}

bool Risky(std::string_view word) {
  for (std::string_view bad : {"/dev", "/proc", "/sys", "dev/", "proc/", "sys/"}) {
    if (word.find(bad) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tuned::fuzz::Quiet();
  tuned::fuzz::ClearTunedEnvironment();
  // Relative paths (export --out, report --out) land in a folder of our own.
  if (chdir(Dir().c_str()) != 0) abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> words = {"tunectl"};
  std::string_view input(reinterpret_cast<const char*>(data), size);
  while (!input.empty()) {
    const size_t end = input.find('\n');
    words.emplace_back(input.substr(0, end));
    if (words.size() > kMaxWords || Risky(words.back())) return -1;
    if (end == std::string_view::npos) break;
    input.remove_prefix(end + 1);
  }
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const int rc = tuned::RunTunectl(static_cast<int>(words.size()), argv.data(),
                                   "unix:" + Dir() + "/no-daemon.sock");
  if (rc < 0 || rc > 2) abort();  // tunectl's exit statuses: 0, 1, 2
  return 0;
}
