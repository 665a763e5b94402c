// The store's kernel sources (store.h): each distinct CUDA source text is
// one row of `sources`, which binaries and the compile cache refer to by id.
// A row is found by its digest (SourceDigest, unique) and its text; rows
// without a digest (moved by migration 8 and not yet filled in, or a text
// whose digest another text holds) are found by their text alone.
#include <optional>
#include <string>

#include "db/store.h"
#include "db/store_internal.h"
#include "core/status.h"

namespace tuned {

using store_internal::SourceDigest;

absl::StatusOr<std::optional<int64_t>> Store::FindSource(std::string_view text, int64_t digest) {
  auto q = Query("SELECT id FROM sources WHERE digest = ?1 AND text = ?2", digest, text);
  if (!q.ok()) return q.status();
  if (!q->empty()) return std::optional<int64_t>(q->Int(0, 0));
  q = Query("SELECT id FROM sources WHERE digest IS NULL AND text = ?1 ORDER BY id LIMIT 1", text);
  if (!q.ok()) return q.status();
  if (!q->empty()) return std::optional<int64_t>(q->Int(0, 0));
  return std::optional<int64_t>();
}

absl::StatusOr<int64_t> Store::InsertSource(std::string_view text) {
  const int64_t digest = SourceDigest(text);
  auto found = FindSource(text, digest);
  if (!found.ok()) return found.status();
  if (found->has_value()) return **found;
  // On PostgreSQL a daemon that inserts the same digest meanwhile makes this
  // wait for its commit, then do nothing.
  auto insert = Query(
      "INSERT INTO sources (digest, text) VALUES (?1, ?2) ON CONFLICT DO NOTHING RETURNING id",
      digest, text);
  if (!insert.ok()) return insert.status();
  if (!insert->empty()) return insert->Int(0, 0);
  // The digest is taken: by this text, from another daemon, or by another text.
  found = FindSource(text, digest);
  if (!found.ok()) return found.status();
  if (found->has_value()) return **found;
  insert = Query("INSERT INTO sources (digest, text) VALUES (NULL, ?1) RETURNING id", text);
  if (!insert.ok()) return insert.status();
  if (insert->empty()) return absl::InternalError("source insert returned no id");
  return insert->Int(0, 0);
}

absl::Status Store::FillSourceDigests() {
  absl::MutexLock lock(&mu_);
  // A few texts (~100 KB each) at a time; a row left without its digest is
  // passed over by `after`.
  constexpr int64_t kBatch = 16;
  int64_t after = 0;
  for (;;) {
    auto q = Query("SELECT id, text FROM sources WHERE digest IS NULL AND id > ?1 "
                   "ORDER BY id LIMIT ?2",
                   after, kBatch);
    if (!q.ok()) return q.status();
    for (size_t r = 0; r < q->size(); ++r) {
      const int64_t id = q->Int(r, 0);
      after = id;
      auto set = Query("UPDATE sources SET digest = ?1 WHERE id = ?2 AND digest IS NULL",
                       SourceDigest(q->Text(r, 1)), id);
      // FAILED_PRECONDITION: another text holds the digest (unique), and
      // this one stays without it.
      if (!set.ok() && !absl::IsFailedPrecondition(set.status())) return set.status();
    }
    if (q->size() < static_cast<size_t>(kBatch)) return absl::OkStatus();
  }
}

}  // namespace tuned
