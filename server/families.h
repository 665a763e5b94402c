// The daemon's side of the family registry (families/family.h): a
// problem's family, built-in or a kernel spec read from the store (every
// daemon sharing the database sees every registered spec), and what the
// API says of a family.
#pragma once

#include "absl/status/statusor.h"
#include "db/store.h"
#include "families/family.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned {

/// The family of a problem in canonical form (ResolveProblem): a built-in
/// one, or the kernel spec version named by family_name and spec_hash,
/// loaded from `store` the first time. INVALID_ARGUMENT for an unknown
/// family, a dtype the family does not take, or a math mode it does not
/// tune; NOT_FOUND for an unregistered spec version.
absl::StatusOr<const Family*> FamilyOf(const v1::Problem& problem, Store* store);

/// Puts a request's problem in canonical form: a built-in family named by
/// family_name gets its enum (family_name cleared); a kernel spec's problem
/// gets the newest version's spec_hash where it names none, and no dtype
/// (a spec's buffers have their own types). NOT_FOUND for an unregistered
/// name; INVALID_ARGUMENT for a problem that names no family, or two.
absl::Status ResolveProblem(v1::Problem* problem, Store* store);

/// The API's description of a family (ListFamilies, GetFamily): name,
/// dims, params, space size, unit, baseline; for a kernel spec its hash,
/// and the spec itself where `with_spec`.
v1::FamilyInfo DescribeFamily(const Family& family, bool with_spec);

}  // namespace tuned
