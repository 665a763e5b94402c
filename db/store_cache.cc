// The store's compile cache (shared by every daemon of the database) and
// the crash counts that quarantine a config (store.h).
#include "db/store.h"

#include <optional>

#include "db/store_internal.h"
#include "core/status.h"

namespace tuned {

using store_internal::NowUnix;
using store_internal::Digest;

absl::StatusOr<std::optional<CompiledRow>> Store::LookupCompiled(const CompileKey& k) {
  absl::MutexLock lock(&mu_);
  auto q = Query(
      "SELECT c.ok, c.message, c.registers, c.local_bytes, c.compile_ms, "
      "bs.text, b.entry, b.cubin, b.ptx, b.log "
      "FROM compiled c JOIN sources s ON s.id = c.source_id "
      "LEFT JOIN binaries b ON b.id = c.binary_id LEFT JOIN sources bs ON bs.id = b.source_id "
      "WHERE c.digest = ?1 AND s.text = ?2 AND c.name_expression = ?3 AND c.options = ?4 "
      "AND c.arch = ?5 AND c.nvrtc_version = ?6 LIMIT 1",
      Digest(k), k.source, k.name_expression, k.options, k.arch, k.nvrtc_version);
  if (!q.ok()) return q.status();
  if (q->empty()) return std::optional<CompiledRow>();
  CompiledRow r;
  r.ok = q->Int(0, 0) != 0;
  r.message = q->Text(0, 1);
  r.registers = static_cast<int>(q->Int(0, 2));
  r.local_bytes = static_cast<int>(q->Int(0, 3));
  r.compile_ms = q->Double(0, 4);
  r.binary = {q->Text(0, 5), q->Text(0, 6), q->Text(0, 7), q->Text(0, 8), q->Text(0, 9)};
  return std::optional<CompiledRow>(std::move(r));
}

absl::StatusOr<bool> Store::HasCompiled(const CompileKey& k) {
  absl::MutexLock lock(&mu_);
  auto q = Query(
      "SELECT 1 FROM compiled c JOIN sources s ON s.id = c.source_id WHERE c.digest = ?1 "
      "AND s.text = ?2 AND c.name_expression = ?3 AND c.options = ?4 AND c.arch = ?5 "
      "AND c.nvrtc_version = ?6 LIMIT 1",
      Digest(k), k.source, k.name_expression, k.options, k.arch, k.nvrtc_version);
  if (!q.ok()) return q.status();
  return !q->empty();
}

absl::Status Store::AddCompiled(const CompileKey& k, const CompiledRow& r) {
  absl::MutexLock lock(&mu_);
  return InTxn(false, [&]() -> absl::Status {
    const int64_t digest = Digest(k);
    auto find = Query("SELECT c.id FROM compiled c JOIN sources s ON s.id = c.source_id "
                      "WHERE c.digest = ?1 AND s.text = ?2 AND c.name_expression = ?3 "
                      "AND c.options = ?4 AND c.arch = ?5 AND c.nvrtc_version = ?6 LIMIT 1",
                      digest, k.source, k.name_expression, k.options, k.arch, k.nvrtc_version);
    if (!find.ok()) return find.status();
    if (!find->empty()) return absl::OkStatus();  // cached already (idempotent)
    std::optional<int64_t> binary_id;
    if (r.ok) {
      auto id = InsertBinary(r.binary);
      if (!id.ok()) return id.status();
      binary_id = *id;
    }
    auto source_id = InsertSource(k.source);
    if (!source_id.ok()) return source_id.status();
    return Query("INSERT INTO compiled (digest, source_id, name_expression, options, arch, "
                 "nvrtc_version, ok, message, binary_id, registers, local_bytes, compile_ms, "
                 "created_unix) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                 digest, *source_id, k.name_expression, k.options, k.arch, k.nvrtc_version, r.ok,
                 r.message, binary_id, r.registers, r.local_bytes, r.compile_ms, NowUnix())
        .status();
  });
}

absl::StatusOr<int> Store::AddCrash(int64_t device_id, const ProblemKey& key, std::string_view config,
                                    std::string_view what) {
  const std::string family = FormatFamily(key);
  absl::MutexLock lock(&mu_);
  TUNED_RETURN_IF_ERROR(InTxn(false, [&]() -> absl::Status {
    return Query("INSERT INTO crashes (device_id, family, config, count, last) "
                 "VALUES (?1, ?2, ?3, 1, ?4) ON CONFLICT (device_id, family, config) "
                 "DO UPDATE SET count = crashes.count + 1, last = excluded.last",
                 device_id, family, config, what)
        .status();
  }));
  return CrashCountLocked(device_id, family, config);
}

absl::StatusOr<int> Store::CrashCount(int64_t device_id, const ProblemKey& key, std::string_view config) {
  const std::string family = FormatFamily(key);
  absl::MutexLock lock(&mu_);
  return CrashCountLocked(device_id, family, config);
}

absl::StatusOr<int> Store::CrashCountLocked(int64_t device_id, const std::string& family,
                                            std::string_view config) {
  auto q = Query("SELECT count FROM crashes WHERE device_id = ?1 AND family = ?2 AND config = ?3",
                 device_id, family, config);
  if (!q.ok()) return q.status();
  return q->empty() ? 0 : static_cast<int>(q->Int(0, 0));
}

}  // namespace tuned
