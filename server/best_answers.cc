#include "server/best_answers.h"

namespace tuned {

std::optional<BestAnswers::Answer> BestAnswers::Find(absl::string_view request,
                                                     Generations now) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = answers_.find(request);
  if (it == answers_.end()) return std::nullopt;
  const Answer& a = it->second;
  if (a.row.expired() || (a.best_generation && *a.best_generation != now.best) ||
      (a.spec_generation && *a.spec_generation != now.spec)) {
    return std::nullopt;
  }
  return a;
}

void BestAnswers::Add(absl::string_view request, Answer answer) {
  absl::MutexLock lock(&mu_);
  const size_t size = request.size() + answer.bytes.size();
  if (size > kMaxBytes) return;
  if (auto it = answers_.find(request); it != answers_.end()) {
    bytes_ -= it->first.size() + it->second.bytes.size();
    it->second = std::move(answer);
    bytes_ += size;
    return;
  }
  if (answers_.size() >= kMaxAnswers || bytes_ + size > kMaxBytes) {
    answers_.clear();
    bytes_ = 0;
  }
  answers_.emplace(std::string(request), std::move(answer));
  bytes_ += size;
}

}  // namespace tuned
