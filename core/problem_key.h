// A problem's identity: what makes two problems of one shape different
// problems (their own measurements, winners and best). The shape stands
// beside the key, never in it.
//
// Its one text form, e.g.
//   sgemm:a=bf16,b=bf16,c=f32,compute=f32,layout=nt,math=tf32,epilogue=bias_relu
//   sgemm:a=f32,b=f32,c=f32,compute=f32
//   matmul@3f2a...            (a kernel spec's version: its name and hash)
// is the family, then ':' and the fields in a fixed order as name=value,
// each value the proto enum's name without its prefix, in lower case; a
// field at its default is left out. FormatKey writes it and ParseKey reads
// it, here only (Python: client/python/tuned/problem_key.py, the same rules,
// checked against tests/data/problem_keys.txt).
//
// Adding an axis: a member here, one row in problem_key.cc's field table,
// and its line in KeyOf/ToProblem. Its default is left out of the text, so
// every key written before the axis existed still reads as the same key.
#pragma once

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned {

struct ProblemKey {
  /// A built-in family's name ("sgemm", "transpose": its tuner.proto Family
  /// enum name without "FAMILY_", in lower case) or a kernel spec's name (a
  /// C identifier).
  std::string family;
  /// A kernel spec's version (FamilyInfo.spec_hash, lower-case hex); empty
  /// for a built-in family.
  std::string spec_hash;
  /// The element types of A, B and C, and the type the product accumulates
  /// in (DTYPE_F32, DTYPE_BF16 or DTYPE_F16; DTYPE_UNSPECIFIED: none, as a
  /// kernel spec's problem, whose arguments have their own types).
  v1::DType a = v1::DTYPE_UNSPECIFIED;
  v1::DType b = v1::DTYPE_UNSPECIFIED;
  v1::DType c = v1::DTYPE_UNSPECIFIED;
  v1::DType compute = v1::DTYPE_UNSPECIFIED;
  v1::Layout layout = v1::LAYOUT_NN;
  v1::Math math = v1::MATH_IEEE_FP32;
  v1::Epilogue epilogue = v1::EPILOGUE_NONE;

  bool operator==(const ProblemKey&) const = default;
  /// Whether the family is a kernel spec's version (spec_hash set).
  bool is_spec() const { return !spec_hash.empty(); }
};

/// The key's canonical text (see the file comment). Every key that ParseKey
/// accepts formats back to the text it was read from.
std::string FormatKey(const ProblemKey& key);

/// The text of `key`'s family alone, its other fields left out: "sgemm",
/// "matmul@3f2a..." (what is kept per family, not per problem).
std::string FormatFamily(const ProblemKey& key);

/// Reads FormatKey's text. INVALID_ARGUMENT, naming what is wrong, for a
/// family that is no identifier or no built-in family (without '@'), a
/// hash that is no lower-case hex, an unknown field or value, a field given
/// twice, and a text that is not canonical (fields out of order, a default
/// written out): the message gives the canonical text then.
absl::StatusOr<ProblemKey> ParseKey(absl::string_view text);

/// The key of a problem in canonical form (server/families.h
/// ResolveProblem: a built-in family by its enum, a kernel spec by
/// family_name and its spec_hash): DTYPE_BF16_F32 is a=bf16 b=bf16 c=f32,
/// and every set dtype accumulates in f32.
ProblemKey KeyOf(const v1::Problem& problem);

/// The problem of `key` without a shape: KeyOf's inverse. INVALID_ARGUMENT
/// for element types that no dtype has (as KeyOf gives them; a dtype number
/// that tuner.proto does not name stands as a, b and c, and its family's
/// check refuses it), or a built-in family this build does not know.
absl::StatusOr<v1::Problem> ToProblem(const ProblemKey& key);

}  // namespace tuned
