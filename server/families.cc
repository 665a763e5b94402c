#include "server/families.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/text.h"
#include "families/kernel_text.h"
#include "families/spec_family.h"

namespace tuned {

SpecLoader StoredSpecs(Store* store) {
  return [store](const std::string& name, const std::string& hash) -> absl::StatusOr<v1::KernelSpec> {
    auto stored = store->GetSpec(name, hash);
    if (!stored.ok()) return stored.status();
    return std::move(stored->spec);
  };
}

absl::Status ResolveProblem(v1::Problem* problem, Store* store) {
  if (problem->family_name().empty()) {
    if (!problem->spec_hash().empty()) {
      return absl::InvalidArgumentError("spec_hash is for a kernel spec named by family_name");
    }
    return absl::OkStatus();
  }
  if (problem->family() != v1::FAMILY_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat("the problem names two families: ",
                                                   EnumName(problem->family()), " and \"",
                                                   problem->family_name(), "\""));
  }
  if (const Family* builtin = FindFamily(problem->family_name()); builtin != nullptr) {
    if (!problem->spec_hash().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(problem->family_name(), " is a built-in family: it has no spec_hash"));
    }
    problem->set_family(builtin->id());
    problem->clear_family_name();
    // A built-in family's dtype defaults to f32, as a client that names it by name expects.
    if (problem->dtype() == v1::DTYPE_UNSPECIFIED) problem->set_dtype(v1::DTYPE_F32);
    return absl::OkStatus();
  }
  if (!problem->spec_hash().empty() && problem->spec_hash().size() < 64) {  // a prefix of the hash
    auto version = store->GetSpec(problem->family_name(), problem->spec_hash());
    if (!version.ok()) return version.status();
    problem->set_spec_hash(version->hash);
  }
  if (problem->spec_hash().empty()) {
    auto newest = store->GetSpec(problem->family_name(), "");
    if (!newest.ok()) {
      if (absl::IsNotFound(newest.status())) {
        return absl::NotFoundError(absl::StrCat("no family ", Quote(problem->family_name()),
                                                ": not built in, and no kernel spec of that name is "
                                                "registered (tunectl family add SPEC)"));
      }
      return newest.status();
    }
    problem->set_spec_hash(newest->hash);
  }
  // A kernel spec's buffers and scalars have their own types.
  problem->set_dtype(v1::DTYPE_UNSPECIFIED);
  return absl::OkStatus();
}

v1::FamilyInfo DescribeFamily(const Family& family, bool with_spec) {
  v1::FamilyInfo info;
  info.set_name(std::string(family.name()));
  info.set_builtin(family.is_builtin());
  for (const std::string& d : family.dims()) info.add_dims(d);
  for (const Param& p : family.params()) {
    v1::SpecParam* sp = info.add_params();
    sp->set_name(p.name);
    sp->mutable_values()->Assign(p.values.begin(), p.values.end());
    sp->set_doc(p.doc);
  }
  info.set_space_size(static_cast<int64_t>(family.Space().size()));
  info.set_metric_unit(std::string(family.metric_unit()));
  info.set_baseline_name(std::string(family.baseline_name()));
  if (!family.is_builtin()) info.set_spec_hash(std::string(family.spec_hash()));
  if (with_spec) {
    if (auto spec = SpecWithSource(family)) *info.mutable_spec() = *std::move(spec);
  }
  return info;
}

}  // namespace tuned
