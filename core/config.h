// A problem's shape and a kernel's config: the two values every layer passes
// around (families/, their kernel specs, the store, the search, the clients).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tuned {

/// A problem's shape in its family's dimension order (sgemm: M, N, K).
using Shape = std::vector<int64_t>;

/// One config: named integer parameters (e.g. {"BM", 128}).
using Config = std::map<std::string, int64_t>;

}  // namespace tuned
