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

/// What the store gives `FamilyOf` (families/family.h): the kernel spec of
/// a version from `store` (every daemon sharing the database sees every
/// registered spec).
SpecLoader StoredSpecs(Store* store);

/// A request's problem resolved at the API edge, once: its canonical form
/// (ResolveProblem), its key and shape, and its family in the form for the
/// key's variant (FamilyOf), the shape checked. What the job runner's
/// Submit and GetBest go on with.
struct ResolvedProblem {
  v1::Problem problem;
  ProblemKey key;
  Shape shape;
  const Family* family = nullptr;
};

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
