// The prior: measurements of another GPU of the same architecture (the
// project's own runs, shipped inside the daemon; format: prior/README.md),
// which the model strategy learns from while this GPU's own database knows
// too little (server/jobs/jobs.cc JobRunner::Knowledge), and which orders the
// compile-ahead (the configs that won somewhere first). Never served: every
// served kernel is measured and judged on this GPU. CPU-only.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "families/family.h"
#include "server/search/strategy.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned::search {

/// How a prior's GPU relates to this one.
enum class PriorMatch {
  kNone,              // another architecture (compute capability): not used
  kSameGpu,           // the same name and compute capability
  kSameArchitecture,  // the same compute capability, another model (an H200 with an H100 prior)
};
std::string_view PriorMatchName(PriorMatch m);

/// The own tuned shapes of a problem kind (family, dtype, math mode) on a
/// GPU kind from which on its prior is no longer used: the public suite's
/// size. Below it the cost model learns from both, this GPU's measurements
/// where it has them.
inline constexpr int kOwnShapesEnough = 12;

class Prior {
 public:
  /// Parses a prior file's text. `origin` names it in messages (a path, or
  /// "shipped"). INVALID_ARGUMENT with the line number for a line that is
  /// not the format, another format version, or a family this daemon does
  /// not have. A row whose config the family no longer accepts (a prior of
  /// an older space) is skipped and counted (skipped()).
  static absl::StatusOr<Prior> Parse(std::string_view text, std::string origin);
  /// Reads and parses a file: NOT_FOUND if it cannot be read; Parse's errors.
  static absl::StatusOr<Prior> Load(const std::string& path);
  /// The prior built into the daemon (prior/h100.tsv); INTERNAL if it does
  /// not parse (a build defect).
  static absl::StatusOr<Prior> Shipped();

  const std::string& origin() const { return origin_; }
  int version() const { return version_; }
  /// The GPU it was measured on: name, cc, SM count, driver, NVRTC.
  const v1::Device& device() const { return device_; }
  /// Where and how it was measured (free text; may be empty).
  const std::string& source() const { return source_; }
  PriorMatch Match(const v1::Device& device) const;
  /// Rows skipped: configs their family does not accept.
  int64_t skipped() const { return skipped_; }

  /// The measurements of one problem kind: a family, dtype and math mode.
  struct Problems {
    std::map<Shape, std::vector<Record>> by_shape;  // fastest first
    /// Its measurements, over every shape.
    int64_t rows() const {
      int64_t n = 0;
      for (const auto& [shape, records] : by_shape) n += static_cast<int64_t>(records.size());
      return n;
    }
  };
  using Key = std::tuple<std::string, v1::DType, v1::Math>;
  const std::map<Key, Problems>& problems() const { return problems_; }
  /// The records of the family (by name), dtype and math mode, less those
  /// of `except` and of the shapes in `skip` (nullptr: none). `fastest` > 0
  /// thins each shape's records: its `fastest` fastest, then every
  /// kThinEvery-th of the rest (the cost model ranks the fast; it needs
  /// only some of the slow).
  std::vector<Record> Records(std::string_view family, v1::DType dtype, v1::Math math,
                              const Shape& except, const std::set<Shape>* skip = nullptr,
                              size_t fastest = 0) const;
  static constexpr size_t kThinEvery = 4;
  /// Configs of the family in the math mode, the most useful first: by
  /// their best rank on any shape of the prior (a shape's winner first),
  /// ties by how many shapes rank them there. What the compile-ahead
  /// compiles first.
  std::vector<Config> Ranked(std::string_view family, v1::Math math) const;

 private:
  std::string origin_;
  int version_ = 0;
  v1::Device device_;
  std::string source_;
  std::map<Key, Problems> problems_;
  int64_t skipped_ = 0;
};

/// The compile-ahead's order (server/jobs/compile.cc): each config name's
/// place, lower first. The default math mode (MATH_IEEE_FP32) before the
/// others; within a mode the configs the prior ranks (Ranked) at their
/// rank, then the neighbours of the first `neighbours_of` of them (where the
/// model's refinement goes) in the order of the config they neighbour.
/// Names not in the map go last, in their order. Placing the neighbours
/// among the ranked configs instead (the neighbours of the i-th at 8i + 4)
/// made the model's first rounds wait longer on NVRTC on the H100 (the
/// first rounds pick from the ranked configs;
/// bench/RESULTS.md fresh-install).
std::map<std::string, size_t> AheadPlaces(const Prior& prior,
                                          const std::vector<const Family*>& families,
                                          size_t neighbours_of);

}  // namespace tuned::search
