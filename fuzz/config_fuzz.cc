// The daemon's TOML config file (tuned --config FILE): the input is the
// file, parsed with the flags and the environment as ParseDaemonOptions
// reads them (server/options.h). A bad file is an exit code and a message,
// never an exception or an exit.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz/fuzz_util.h"
#include "server/options.h"

namespace {

const std::string& ConfigPath() {
  static const std::string* path = new std::string(tuned::fuzz::TempDir("tuned_config") + "/tuned.toml");
  return *path;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tuned::fuzz::Quiet();
  tuned::fuzz::ClearTunedEnvironment();  // only the file speaks
  ConfigPath();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = ConfigPath();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  std::string argv0 = "tuned", flag = "--config", file = path;
  char* argv[] = {argv0.data(), flag.data(), file.data(), nullptr};
  tuned::DaemonOptions options;
  const int rc = tuned::ParseDaemonOptions(3, argv, &options);
  // -1 (go on) or an exit code: 0 only for --help or --print-config, which
  // the file cannot ask for.
  if (rc != -1 && rc < 1) abort();
  return 0;
}
