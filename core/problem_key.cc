#include "core/problem_key.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/text.h"
#include "tuned/dtype.h"

namespace tuned {

namespace {

/// One field of the text: its name, its proto enum (whose names, without
/// `prefix` and in lower case, are its values), how it is read from and
/// written to a key, its default (left out of the text), and which of the
/// enum's values it takes (null: all).
struct Field {
  absl::string_view name;
  const google::protobuf::EnumDescriptor* (*descriptor)();
  absl::string_view prefix;
  int (*get)(const ProblemKey&);
  void (*set)(ProblemKey&, int);
  int default_value;
  bool (*admits)(int value);
};

/// An element type: one of the scalar types (not a GEMM dtype's pair).
bool IsElementType(int value) {
  return value == v1::DTYPE_F32 || value == v1::DTYPE_BF16 || value == v1::DTYPE_F16;
}

#define TUNED_KEY_MEMBER(member, type)                                    \
  [](const ProblemKey& k) { return static_cast<int>(k.member); },        \
      [](ProblemKey& k, int v) { k.member = static_cast<type>(v); }

// The fields in their text order. A new axis is one row here (at the end,
// its default the value that every problem had before it).
const Field kFields[] = {
    {"a", v1::DType_descriptor, "DTYPE_", TUNED_KEY_MEMBER(a, v1::DType), v1::DTYPE_UNSPECIFIED, IsElementType},
    {"b", v1::DType_descriptor, "DTYPE_", TUNED_KEY_MEMBER(b, v1::DType), v1::DTYPE_UNSPECIFIED, IsElementType},
    {"c", v1::DType_descriptor, "DTYPE_", TUNED_KEY_MEMBER(c, v1::DType), v1::DTYPE_UNSPECIFIED, IsElementType},
    {"compute", v1::DType_descriptor, "DTYPE_", TUNED_KEY_MEMBER(compute, v1::DType), v1::DTYPE_UNSPECIFIED,
     IsElementType},
    {"layout", v1::Layout_descriptor, "LAYOUT_", TUNED_KEY_MEMBER(layout, v1::Layout), v1::LAYOUT_NN, nullptr},
    {"math", v1::Math_descriptor, "MATH_", TUNED_KEY_MEMBER(math, v1::Math), v1::MATH_IEEE_FP32, nullptr},
    {"epilogue", v1::Epilogue_descriptor, "EPILOGUE_", TUNED_KEY_MEMBER(epilogue, v1::Epilogue),
     v1::EPILOGUE_NONE, nullptr},
};

#undef TUNED_KEY_MEMBER

/// A value's text: its enum name without the prefix, in lower case; the
/// number where this build knows no name (no text parses back to it).
std::string ValueText(const Field& f, int value) {
  const auto* v = f.descriptor()->FindValueByNumber(value);
  if (v == nullptr) return std::to_string(value);
  return absl::AsciiStrToLower(absl::StripPrefix(v->name(), f.prefix));
}

/// The values a field takes, for messages: "nn, nt, tn, tt".
std::string ValuesText(const Field& f) {
  std::vector<std::string> values;
  const auto* d = f.descriptor();
  for (int i = 0; i < d->value_count(); ++i) {
    const int n = d->value(i)->number();
    if (n != f.default_value && (f.admits == nullptr || f.admits(n))) values.push_back(ValueText(f, n));
  }
  return absl::StrJoin(values, ", ");
}

bool IsIdentifier(absl::string_view s) {
  if (s.empty() || absl::ascii_isdigit(s[0])) return false;
  for (char ch : s) {
    if (!absl::ascii_isalnum(ch) && ch != '_') return false;
  }
  return true;
}

bool IsLowerHex(absl::string_view s) {
  if (s.empty()) return false;
  for (char ch : s) {
    if (!absl::ascii_isdigit(ch) && !(ch >= 'a' && ch <= 'f')) return false;
  }
  return true;
}

/// A built-in family's enum from its key name ("sgemm": FAMILY_SGEMM), or
/// FAMILY_UNSPECIFIED.
v1::Family BuiltinEnum(absl::string_view name) {
  v1::Family f = v1::FAMILY_UNSPECIFIED;
  if (name != absl::AsciiStrToLower(name)) return f;
  if (!v1::Family_Parse(absl::StrCat("FAMILY_", absl::AsciiStrToUpper(name)), &f)) {
    return v1::FAMILY_UNSPECIFIED;
  }
  return f;
}

absl::Status KeyError(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("problem key ", Quote(text), ": ", why));
}

}  // namespace

std::string FormatKey(const ProblemKey& key) {
  std::string out = key.family;
  if (key.is_spec()) absl::StrAppend(&out, "@", key.spec_hash);
  char sep = ':';
  for (const Field& f : kFields) {
    const int value = f.get(key);
    if (value == f.default_value) continue;
    absl::StrAppend(&out, absl::string_view(&sep, 1), f.name, "=", ValueText(f, value));
    sep = ',';
  }
  return out;
}

std::string FormatFamily(const ProblemKey& key) {
  return FormatKey(ProblemKey{.family = key.family, .spec_hash = key.spec_hash});
}

absl::StatusOr<ProblemKey> ParseKey(absl::string_view text) {
  ProblemKey key;
  const size_t colon = text.find(':');
  const absl::string_view head = text.substr(0, colon);
  const size_t at = head.find('@');
  key.family = std::string(head.substr(0, at));
  if (!IsIdentifier(key.family)) {
    return KeyError(text, "the family must be a name (letters, digits, '_'), then '@' and a spec's hash "
                          "for a kernel spec, then ':' and the fields");
  }
  if (at != absl::string_view::npos) {
    key.spec_hash = std::string(head.substr(at + 1));
    if (!IsLowerHex(key.spec_hash)) {
      return KeyError(text, "a kernel spec's version is its hash in lower-case hex after '@'");
    }
  } else if (BuiltinEnum(key.family) == v1::FAMILY_UNSPECIFIED) {
    return KeyError(text, absl::StrCat("no built-in family is named ", Quote(key.family),
                                       " (a kernel spec's key names its version: name@hash)"));
  }
  if (colon == absl::string_view::npos) return key;
  std::vector<bool> seen(std::size(kFields), false);
  for (absl::string_view item : absl::StrSplit(text.substr(colon + 1), ',')) {
    const size_t eq = item.find('=');
    const absl::string_view name = item.substr(0, eq), value = eq == absl::string_view::npos ? "" : item.substr(eq + 1);
    size_t i = 0;
    while (i < std::size(kFields) && kFields[i].name != name) ++i;
    if (i == std::size(kFields)) {
      std::vector<absl::string_view> names;
      for (const Field& f : kFields) names.push_back(f.name);
      return KeyError(text, absl::StrCat("unknown field ", Quote(name), " (fields: ", absl::StrJoin(names, ", "),
                                         ", each as name=value)"));
    }
    const Field& f = kFields[i];
    if (seen[i]) return KeyError(text, absl::StrCat("field ", f.name, " is given twice"));
    seen[i] = true;
    const auto* d = f.descriptor();
    int j = 0;
    while (j < d->value_count() &&
           !((f.admits == nullptr || f.admits(d->value(j)->number())) && ValueText(f, d->value(j)->number()) == value)) {
      ++j;
    }
    if (j == d->value_count()) {
      return KeyError(text, absl::StrCat(f.name, " cannot be ", Quote(value), " (", f.name, " is one of ",
                                         ValuesText(f), ")"));
    }
    f.set(key, d->value(j)->number());
  }
  if (const std::string canonical = FormatKey(key); canonical != text) {
    return KeyError(text, absl::StrCat("not in canonical form (fields in the order ",
                                       "a, b, c, compute, layout, math, epilogue; a default left out): ",
                                       Quote(canonical, 256)));
  }
  return key;
}

ProblemKey KeyOf(const v1::Problem& problem) {
  ProblemKey key;
  if (problem.family_name().empty()) {
    // A number this build knows no name of stays a number (no key parses to it).
    const std::string name = v1::Family_Name(problem.family());
    key.family = name.empty() ? std::to_string(static_cast<int>(problem.family()))
                              : absl::AsciiStrToLower(absl::StripPrefix(name, "FAMILY_"));
  } else {
    key.family = problem.family_name();
    key.spec_hash = problem.spec_hash();
  }
  if (problem.dtype() != v1::DTYPE_UNSPECIFIED) {
    key.a = key.b = InputDType(problem.dtype());
    key.c = OutputDType(problem.dtype());
    key.compute = v1::DTYPE_F32;
  }
  key.layout = problem.layout();
  key.math = problem.math();
  key.epilogue = problem.epilogue();
  return key;
}

absl::StatusOr<v1::Problem> ToProblem(const ProblemKey& key) {
  v1::Problem problem;
  if (key.is_spec()) {
    problem.set_family_name(key.family);
    problem.set_spec_hash(key.spec_hash);
  } else {
    const v1::Family f = BuiltinEnum(key.family);
    if (f == v1::FAMILY_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat("no built-in family is named ", Quote(key.family)));
    }
    problem.set_family(f);
  }
  problem.set_layout(key.layout);
  problem.set_math(key.math);
  problem.set_epilogue(key.epilogue);
  // The dtype whose types these are: one this build names, or a number it
  // does not know (KeyOf gives it as a, b and c), which its family refuses.
  std::vector<int> dtypes = {key.a};
  for (int i = 0; i < v1::DType_descriptor()->value_count(); ++i) {
    dtypes.push_back(v1::DType_descriptor()->value(i)->number());
  }
  for (int dtype : dtypes) {
    problem.set_dtype(static_cast<v1::DType>(dtype));
    const ProblemKey back = KeyOf(problem);
    if (back.a == key.a && back.b == key.b && back.c == key.c && back.compute == key.compute) return problem;
  }
  return absl::InvalidArgumentError(absl::StrCat("no dtype has the element types of ", Quote(FormatKey(key), 256),
                                                 " (a, b, c and compute)"));
}

}  // namespace tuned
