// The one place where families are found: the built-in ones (code, or a
// spec shipped with the daemon; each a folder under families/, listed by
// cmake/family.cmake) and the kernel specs added at run time.
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status.h"
#include "families/family.h"
#include "families/spec/spec.h"
#include "families/spec_family.h"

namespace tuned {

namespace {
/// The kernel spec families of this process, by (name, hash); never
/// removed, so that the pointers handed out stay valid.
struct SpecFamilies {
  absl::Mutex mu;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<SpecFamily>> by_version ABSL_GUARDED_BY(mu);
};

SpecFamilies& Specs() {
  static SpecFamilies* specs = new SpecFamilies();
  return *specs;
}
}  // namespace

std::vector<const Family*> AllFamilies() {
  std::vector<const Family*> all;
  for (const Family* f : BuiltinFamilies()) {
    if (!f->test_only() || FaultTestFamilyEnabled()) all.push_back(f);
  }
  return all;
}

const Family* FindFamily(v1::Family id) {
  for (const Family* f : AllFamilies()) {
    if (f->id() == id) return f;
  }
  return nullptr;
}

const Family* FindFamily(std::string_view name) {
  for (const Family* f : AllFamilies()) {
    if (f->name() == name || (!f->alias().empty() && f->alias() == name)) return f;
  }
  return nullptr;
}

const Family* FindFamily(const v1::Problem& problem) {
  if (problem.family_name().empty()) return InForm(FindFamily(problem.family()), problem);
  if (const Family* f = FindFamily(problem.family_name()); f != nullptr) {
    return InForm(f, problem);
  }
  SpecFamilies& specs = Specs();
  absl::MutexLock lock(&specs.mu);
  auto it = specs.by_version.find({problem.family_name(), problem.spec_hash()});
  return it == specs.by_version.end() ? nullptr : it->second.get();
}

absl::StatusOr<const Family*> FamilyOf(const ProblemKey& key, const SpecLoader& load_spec) {
  auto problem = ToProblem(key);
  const Family* family = problem.ok() ? FindFamily(*problem) : nullptr;
  if (family == nullptr && problem.ok() && key.is_spec() && load_spec) {
    auto spec = load_spec(key.family, key.spec_hash);
    if (!spec.ok()) return spec.status();
    auto added = AddSpecFamily(*spec);
    if (!added.ok()) return added.status();
    family = *added;
  }
  if (family == nullptr) {
    std::vector<std::string> builtin;
    for (const Family* f : AllFamilies()) builtin.emplace_back(f->name());
    if (!problem.ok() && !key.is_spec() && BuiltinFamilyId(key.family) != v1::FAMILY_UNSPECIFIED) {
      return problem.status();  // a known family: the element types are wrong
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown kernel family ", key.family, " (built-in: ", absl::StrJoin(builtin, ", "),
        "; `tunectl families` lists the registered kernel specs)"));
  }
  if (family->spec() == nullptr || family->id() != v1::FAMILY_UNSPECIFIED) {
    TUNED_RETURN_IF_ERROR(family->ValidateDType(problem->dtype()));
  } else if (problem->dtype() != v1::DTYPE_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel spec ", std::string(family->name()), " takes no dtype (its arguments have their types)"));
  }
  TUNED_RETURN_IF_ERROR(family->ValidateMath(key.math));
  TUNED_RETURN_IF_ERROR(family->ValidateLayout(key.layout));
  TUNED_RETURN_IF_ERROR(family->ValidateEpilogue(key.epilogue));
  return family;
}

absl::Status CheckSpecFamilyName(std::string_view name) {
  // In any case: "SGEMM" beside sgemm reads as the same family.
  for (const Family* f : AllFamilies()) {
    if (absl::EqualsIgnoreCase(std::string(f->name()), std::string(name)) ||
        (!f->alias().empty() && absl::EqualsIgnoreCase(std::string(f->alias()), std::string(name)))) {
      return absl::AlreadyExistsError(absl::StrCat("\"", std::string(name), "\" is the built-in family ",
                                                   std::string(f->name()),
                                                   "; give the kernel spec another name"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<const Family*> AddSpecFamily(const v1::KernelSpec& spec) {
  TUNED_RETURN_IF_ERROR(CheckSpecFamilyName(spec.name()));
  const std::pair<std::string, std::string> key{spec.name(), spec::SpecHash(spec)};
  SpecFamilies& specs = Specs();
  {
    absl::MutexLock lock(&specs.mu);
    if (auto it = specs.by_version.find(key); it != specs.by_version.end()) return it->second.get();
  }
  auto family = SpecFamily::Create(spec);
  if (!family.ok()) return family.status();
  absl::MutexLock lock(&specs.mu);
  auto [it, added] = specs.by_version.emplace(key, *std::move(family));
  return it->second.get();
}

void ForgetSpecFamilies() {
  SpecFamilies& specs = Specs();
  absl::MutexLock lock(&specs.mu);
  specs.by_version.clear();
}

}  // namespace tuned
