// GetBest's answers, serialized once and sent by reference: the look-up a
// client makes before every launch costs a hash look-up, not a query, a
// message build and a serialization (a full view's cubin is never copied).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/support/slice.h"

namespace tuned {

class BestAnswers {
 public:
  /// A serialized tuned.v1.BestKernel, and whether it is a nearest shape's
  /// kernel (for the tuned_lookups_total metric).
  struct Answer {
    grpc::Slice bytes;
    bool nearest = false;
  };
  /// At most this many answers, and this many bytes of them, are held; a
  /// full cache is emptied before the next answer is added.
  static constexpr size_t kMaxAnswers = 4096;
  static constexpr size_t kMaxBytes = size_t{256} << 20;

  /// The answer to the request whose bytes are `request`, if one was added
  /// at store generation `generation` (Store::BestGeneration).
  std::optional<Answer> Find(absl::string_view request, uint64_t generation) const
      ABSL_LOCKS_EXCLUDED(mu_);
  /// Holds `answer` to `request`, built from the store at `generation`. A
  /// newer generation drops every older answer; an answer of an older one
  /// than held is not added.
  void Add(absl::string_view request, uint64_t generation, Answer answer) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, Answer> answers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tuned
