// What every fuzz target needs: silence, a temporary folder of its own, an
// environment without TUNED_* variables.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <streambuf>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include <string>

namespace tuned::fuzz {

/// Sends std::cout, std::cerr and protobuf's log nowhere (the code under test prints; a
/// fuzzer runs it thousands of times a second). libFuzzer's own output and
/// the sanitizers' reports go to stderr's file descriptor, not through them.
inline void Quiet() {
  class NullBuffer : public std::streambuf {
   protected:
    int overflow(int c) override { return c == EOF ? 0 : c; }
    std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
  };
  static NullBuffer* null = new NullBuffer();
  std::cout.rdbuf(null);
  std::cerr.rdbuf(null);
  // Protobuf's complaints (a string field that is not UTF-8, parsed or serialized).
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string&) {});
}

/// A new folder under $TMPDIR (or /tmp), removed when the process exits.
inline std::string TempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + prefix + "_XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    perror("mkdtemp");
    abort();
  }
  static std::vector<std::string>* to_remove = [] {
    auto* v = new std::vector<std::string>();
    atexit([] {
      for (const std::string& d : *to_remove) {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
      }
    });
    return v;
  }();
  to_remove->push_back(pattern);
  return pattern;
}

/// Unsets every TUNED_* variable: only the input speaks.
inline void ClearTunedEnvironment() {
  for (char** e = environ; *e != nullptr;) {
    const std::string var(*e);
    if (var.rfind("TUNED_", 0) == 0) {
      unsetenv(var.substr(0, var.find('=')).c_str());
    } else {
      ++e;
    }
  }
}

}  // namespace tuned::fuzz
