#include "server/best_answers.h"

namespace tuned {

std::optional<BestAnswers::Answer> BestAnswers::Find(absl::string_view request,
                                                     uint64_t generation) const {
  absl::ReaderMutexLock lock(&mu_);
  if (generation != generation_) return std::nullopt;
  auto it = answers_.find(request);
  if (it == answers_.end()) return std::nullopt;
  return it->second;
}

void BestAnswers::Add(absl::string_view request, uint64_t generation, Answer answer) {
  absl::MutexLock lock(&mu_);
  if (generation < generation_) return;
  const size_t size = request.size() + answer.bytes.size();
  if (generation > generation_ || answers_.size() >= kMaxAnswers || bytes_ + size > kMaxBytes) {
    answers_.clear();
    bytes_ = 0;
    generation_ = generation;
  }
  if (size > kMaxBytes) return;
  if (answers_.try_emplace(std::string(request), std::move(answer)).second) bytes_ += size;
}

}  // namespace tuned
