// GetBest's answers, serialized once and sent by reference: the look-up a
// client makes before every launch costs a hash look-up, not a query, a
// message build and a serialization (a full view's cubin is never copied).
// An answer holds while what it was built from holds: the store's row of the
// problem it serves (BestRow::current), and where it depends on more, the
// store's generations (a nearest shape's answer: every best and the tuned
// shapes; a spec named without its full hash: the spec's newest version).
// A write to another problem's best leaves it as it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/support/slice.h"

namespace tuned {

class BestAnswers {
 public:
  /// The store's generations at a look-up (Store::BestGeneration,
  /// Store::SpecGeneration).
  struct Generations {
    uint64_t best = 0;
    uint64_t spec = 0;
  };
  /// A serialized tuned.v1.BestKernel, whether it is a nearest shape's
  /// kernel (for the tuned_lookups_total metric), and what it holds while.
  struct Answer {
    grpc::Slice bytes;
    bool nearest = false;
    /// The `held` of the store's row it serves (BestRow::held).
    std::weak_ptr<const void> row = {};
    /// The generations it was built at, where it depends on them.
    std::optional<uint64_t> best_generation = std::nullopt;
    std::optional<uint64_t> spec_generation = std::nullopt;
  };
  /// At most this many answers, and this many bytes of them, are held; a
  /// full cache is emptied before the next answer is added.
  static constexpr size_t kMaxAnswers = 4096;
  static constexpr size_t kMaxBytes = size_t{256} << 20;

  /// The answer held to the request whose bytes are `request`, if it still
  /// holds at the store's generations `now`.
  std::optional<Answer> Find(absl::string_view request, Generations now) const
      ABSL_LOCKS_EXCLUDED(mu_);
  /// Holds `answer` to `request` in place of any older one.
  void Add(absl::string_view request, Answer answer) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, Answer> answers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tuned
