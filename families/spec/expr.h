// Integer expressions of kernel specs: restrictions, sizes, launch geometry.
//
// Syntax (C-like): integer and decimal literals, variables, + - * / %, unary
// - and !, comparisons == != < <= > >=, && ||, a ? b : c, parentheses, and
// the functions ceil_div(a, b), min(a, b, ...), max(a, b, ...).
// Semantics: values are int64 held exactly (every intermediate value must be
// within +-2^53); / and % are C's integer division and remainder (truncated
// toward zero) and need integer operands; ceil_div(a, b) is the least
// integer >= a / b; comparisons and logic give 0 or 1, and any non-zero
// operand of && || ! ?: is true.
//
// The parser is muParser (Debian's libmuparser-dev) with its built-in
// operators replaced by the ones above: its own `/` divides in floating
// point, it has no `%` or `!`, and it gives inf for a division by zero.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tuned::spec {

/// Whether `name` is one of the expressions' functions (ceil_div, min,
/// max), which no variable may be named.
bool IsFunction(std::string_view name);

/// An expression compiled once over a fixed list of variable names and
/// evaluated many times. Move-only; evaluating is not thread-safe (each
/// thread compiles its own).
class Expr {
 public:
  /// Compiles `text` over the variables `names` (C identifiers). Errors
  /// (INVALID_ARGUMENT): an empty expression; a name that is neither one of
  /// `names` nor a function ("unknown name 'x'"); a syntax error, with its
  /// position. Errors that depend on values (division by zero) come from
  /// Evaluate.
  static absl::StatusOr<Expr> Compile(std::string_view text, const std::vector<std::string>& names);

  Expr(Expr&&) noexcept;
  Expr& operator=(Expr&&) noexcept;
  ~Expr();

  /// The expression's text, as given.
  const std::string& text() const;
  /// The variables the expression uses (a subset of Compile's names), sorted.
  const std::vector<std::string>& used() const;
  /// Whether the expression's top-level operator is a comparison or a
  /// logical one (== != < <= > >= && || !), as a restriction's must be.
  bool IsBoolean() const;

  /// The value for `values`, given in the order of Compile's names (one
  /// each). INVALID_ARGUMENT for a division or modulo by zero, an operand of
  /// / % ceil_div that is not an integer, or a value beyond +-2^53.
  absl::StatusOr<double> Evaluate(absl::Span<const int64_t> values) const;
  /// As Evaluate; also INVALID_ARGUMENT where the value is not an integer.
  absl::StatusOr<int64_t> EvaluateInt(absl::Span<const int64_t> values) const;
  /// As Evaluate; INVALID_ARGUMENT unless the value is 0 or 1.
  absl::StatusOr<bool> EvaluateBool(absl::Span<const int64_t> values) const;

 private:
  struct Impl;
  explicit Expr(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Evaluates `text` once with named values (tests, tools). Errors as
/// Expr::Compile and Expr::EvaluateInt.
absl::StatusOr<int64_t> EvaluateInt(std::string_view text, const std::map<std::string, int64_t>& vars);

}  // namespace tuned::spec
