// The one place where families are found: the built-in ones (code, or a
// spec shipped with the daemon; each a folder under families/, listed by
// cmake/family.cmake) and the kernel specs added at run time.
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
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
