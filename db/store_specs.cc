// The store's kernel specs (store.h): the versions of the specs that
// clients registered, by name and content hash.
#include "db/store.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "db/store_internal.h"
#include "core/status.h"
#include "core/text.h"

namespace tuned {

using store_internal::QueryOn;

namespace {

/// Whether `hash` is a SHA-256 in lower-case hex (spec::SpecHash's form).
bool IsSpecHash(std::string_view hash) {
  if (hash.size() != 64) return false;
  for (char c : hash) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Columns of a stored spec, read by ReadSpec in this order (`s`: kernel_specs).
#define TUNED_SPEC_COLS                                                                  \
  "s.name, s.hash, s.spec, s.client, s.created_unix, "                                   \
  "(SELECT COUNT(*) FROM kernel_specs c WHERE c.name = s.name)"

/// Reads row `r` of TUNED_SPEC_COLS. DATA_LOSS if the bytes do not parse.
absl::Status ReadSpec(const Rows& q, size_t r, StoredSpec* out) {
  if (!out->spec.ParseFromString(q.Text(r, 2))) {
    return absl::DataLossError(absl::StrCat("stored kernel spec '", q.Text(r, 0), "' version ",
                                            q.Text(r, 1), " does not parse"));
  }
  out->hash = q.Text(r, 1);
  out->client = q.Text(r, 3);
  out->created_unix = q.Int(r, 4);
  out->versions = static_cast<int>(q.Int(r, 5));
  return absl::OkStatus();
}

// Only the newest version of each name: no version of the name is later.
constexpr char kNewest[] =
    "NOT EXISTS (SELECT 1 FROM kernel_specs n WHERE n.name = s.name AND "
    "(n.created_unix > s.created_unix OR (n.created_unix = s.created_unix AND n.seq > s.seq)))";

}  // namespace

absl::StatusOr<bool> Store::AddSpec(const v1::KernelSpec& spec, std::string_view hash,
                                    std::string_view client, int64_t now_unix) {
  if (spec.name().empty()) return absl::InvalidArgumentError("kernel spec has no name");
  if (!IsSpecHash(hash)) {
    return absl::InvalidArgumentError(absl::StrCat("kernel spec '", spec.name(), "': hash '",
                                                   std::string(hash),
                                                   "' is no lower-case hex SHA-256"));
  }
  std::string bytes;
  if (!spec.SerializeToString(&bytes)) {
    return absl::InternalError(absl::StrCat("kernel spec '", spec.name(), "' does not serialize"));
  }
  absl::MutexLock lock(&mu_);
  bool inserted = false;
  // Serialized: seq is the registration order across the fleet; a version
  // stored already (by this or another daemon) is left as it is.
  TUNED_RETURN_IF_ERROR(InTxn(true, [&]() -> absl::Status {
    auto insert = Query(
        "INSERT INTO kernel_specs (name, hash, spec, client, created_unix, seq) "
        "SELECT ?1, ?2, ?3, ?4, ?5, COALESCE(MAX(seq), 0) + 1 FROM kernel_specs WHERE 1 = 1 "
        "ON CONFLICT DO NOTHING",
        spec.name(), hash, Blob{bytes}, client, now_unix);
    if (!insert.ok()) return insert.status();
    inserted = insert->affected() > 0;
    // A new version may be a name's newest, which a look-up of the name
    // without a version resolves to (SpecGeneration), here and fleet-wide.
    return inserted ? Query("{bump}").status() : absl::OkStatus();
  }));
  if (inserted) {
    ++own_bumps_;
    ++spec_generation_;
  }
  return inserted;
}

absl::StatusOr<StoredSpec> Store::GetSpec(std::string_view name, std::string_view hash) {
  const bool prefix = !hash.empty() && hash.size() < 64;
  if (prefix && (hash.size() < kMinHashPrefix ||
                 !std::all_of(hash.begin(), hash.end(),
                              [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "version ", std::string(hash), ": a spec's version is its hash, or the first ",
        kMinHashPrefix, " or more of its 64 lower-case hex digits"));
  }
  // On the reads' connection: a look-up of a spec's problem resolves its version here.
  return Read([&](Database& db) -> absl::StatusOr<StoredSpec> {
    auto q = hash.empty()
                 ? QueryOn(db, absl::StrCat("SELECT " TUNED_SPEC_COLS
                                            " FROM kernel_specs s WHERE s.name = ?1 AND ",
                                            kNewest),
                           name)
             : prefix ? QueryOn(db, "SELECT " TUNED_SPEC_COLS
                                " FROM kernel_specs s WHERE s.name = ?1 AND s.hash LIKE ?2 LIMIT 2",
                                name, absl::StrCat(std::string(hash), "%"))
                      : QueryOn(db, "SELECT " TUNED_SPEC_COLS
                                " FROM kernel_specs s WHERE s.name = ?1 AND s.hash = ?2",
                                name, hash);
    if (!q.ok()) return q.status();
    if (q->size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "version ", Quote(std::string(hash)), " of kernel spec ", Quote(std::string(name)),
          " starts several versions; give more of its hash"));
    }
    if (q->empty()) {
      if (hash.empty()) {
        return absl::NotFoundError(
            absl::StrCat("no kernel spec named ", Quote(std::string(name)), " is registered"));
      }
      auto named = QueryOn(db, "SELECT COUNT(*) FROM kernel_specs WHERE name = ?1", name);
      if (!named.ok()) return named.status();
      if (named->Int(0, 0) == 0) {
        return absl::NotFoundError(absl::StrCat("no kernel spec named ", Quote(std::string(name)),
                                                " is registered (version ",
                                                Quote(std::string(hash)), " asked)"));
      }
      return absl::NotFoundError(absl::StrCat("kernel spec ", Quote(std::string(name)),
                                              " has no version ", Quote(std::string(hash)), " (",
                                              named->Int(0, 0), " versions registered)"));
    }
    StoredSpec out;
    TUNED_RETURN_IF_ERROR(ReadSpec(*q, 0, &out));
    return out;
  });
}

absl::StatusOr<std::vector<StoredSpec>> Store::ListSpecs() {
  absl::MutexLock lock(&mu_);
  auto q = Query(absl::StrCat("SELECT " TUNED_SPEC_COLS " FROM kernel_specs s WHERE ", kNewest,
                              " ORDER BY s.name"));
  if (!q.ok()) return q.status();
  std::vector<StoredSpec> out;
  for (size_t r = 0; r < q->size(); ++r) {
    TUNED_RETURN_IF_ERROR(ReadSpec(*q, r, &out.emplace_back()));
  }
  return out;
}

}  // namespace tuned
