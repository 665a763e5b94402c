#include "families/spec/expr.h"

#include <muParser.h>

#include <cctype>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tuned::spec {
namespace {

// 2^53: every integer of at most this magnitude is exact in a double.
constexpr double kExactLimit = 9007199254740992.0;

// Thrown by the operators below for an error that depends on values; it is
// no mu::ParserError, so that Compile can tell it from a syntax error.
struct ValueError {
  std::string message;
};

double Checked(double v) {
  if (!(std::fabs(v) <= kExactLimit)) {
    throw ValueError{absl::StrFormat("value %.17g is beyond +-2^53 (integers are exact up to 2^53)", v)};
  }
  return v;
}
// An operand of an integer operator: an integer within +-2^53 (a variable or
// a literal may be beyond it, and no double beyond 2^63 converts to int64).
void NeedInteger(double v, const char* op) {
  if (v != std::trunc(v)) {
    throw ValueError{absl::StrFormat("operand %.17g of '%s' is not an integer", v, op)};
  }
  Checked(v);
}
double Add(double a, double b) { return Checked(a + b); }
double Sub(double a, double b) { return Checked(a - b); }
double Mul(double a, double b) { return Checked(a * b); }
double Div(double a, double b) {
  NeedInteger(a, "/");
  NeedInteger(b, "/");
  if (b == 0) throw ValueError{"division by zero"};
  return static_cast<double>(static_cast<int64_t>(a) / static_cast<int64_t>(b));
}
double Mod(double a, double b) {
  NeedInteger(a, "%");
  NeedInteger(b, "%");
  if (b == 0) throw ValueError{"modulo by zero"};
  return static_cast<double>(static_cast<int64_t>(a) % static_cast<int64_t>(b));
}
double CeilDiv(double a, double b) {
  NeedInteger(a, "ceil_div");
  NeedInteger(b, "ceil_div");
  if (b == 0) throw ValueError{"division by zero in ceil_div"};
  const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) == (y < 0))) ++q;
  return static_cast<double>(q);
}
double Lt(double a, double b) { return a < b; }
double Le(double a, double b) { return a <= b; }
double Gt(double a, double b) { return a > b; }
double Ge(double a, double b) { return a >= b; }
double Eq(double a, double b) { return a == b; }
double Ne(double a, double b) { return a != b; }
double And(double a, double b) { return a != 0 && b != 0; }
double Or(double a, double b) { return a != 0 || b != 0; }
double Neg(double a) { return -a; }
double Not(double a) { return a == 0; }

const std::set<std::string, std::less<>>& Functions() {
  static const auto* f = new std::set<std::string, std::less<>>{"ceil_div", "min", "max"};
  return *f;
}

bool IdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The identifiers of `text` that are not functions, checked against `names`.
absl::StatusOr<std::vector<std::string>> UsedNames(const std::string& text,
                                                   const std::vector<std::string>& names) {
  std::set<std::string> used;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {  // a literal, e.g. 1e3
      while (i < text.size() && (IdentChar(text[i]) || text[i] == '.' ||
                                 ((text[i] == '+' || text[i] == '-') && (text[i - 1] == 'e' || text[i - 1] == 'E')))) {
        ++i;
      }
      continue;
    }
    if (!IdentStart(c)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && IdentChar(text[j])) ++j;
    const std::string name(text.substr(i, j - i));
    size_t k = j;
    while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
    const bool call = k < text.size() && text[k] == '(';
    if (call) {
      if (!Functions().contains(name)) {
        return absl::InvalidArgumentError(absl::StrCat("unknown function '", name, "' in \"", text,
                                                       "\" (functions: ceil_div, min, max)"));
      }
    } else if (std::find(names.begin(), names.end(), name) == names.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown name '", name, "' in \"", text, "\" (known: ",
                                                     names.empty() ? "none" : absl::StrJoin(names, ", "), ")"));
    } else {
      used.insert(name);
    }
    i = j;
  }
  return std::vector<std::string>(used.begin(), used.end());
}

// Whether the operator applied last (lowest precedence, outside parentheses)
// is a comparison or a logical one.
bool TopLevelBoolean(std::string_view t) {
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  int depth = 0;
  bool boolean_op = false, wrapped = !t.empty() && t.front() == '(';
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '(') ++depth;
    if (c == ')' && --depth == 0 && i + 1 < t.size()) wrapped = false;
    if (depth != 0) continue;
    if (c == '?') return false;  // a ? b : c
    const char n = i + 1 < t.size() ? t[i + 1] : '\0';
    if (c == '<' || c == '>' || (c == '=' && n == '=') || (c == '!' && n == '=') ||
        (c == '&' && n == '&') || (c == '|' && n == '|')) {
      boolean_op = true;
    }
  }
  if (boolean_op) return true;
  if (wrapped) return TopLevelBoolean(t.substr(1, t.size() - 2));
  if (!t.empty() && t.front() == '!') {  // !x or !(...): nothing binds looser after it
    std::string_view rest = t.substr(1);
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
    if (!rest.empty() && rest.front() == '(') {
      int d = 0;
      for (size_t i = 0; i < rest.size(); ++i) {
        if (rest[i] == '(') ++d;
        if (rest[i] == ')' && --d == 0) return i + 1 == rest.size();
      }
      return false;
    }
    return std::all_of(rest.begin(), rest.end(), IdentChar);
  }
  return false;
}

}  // namespace

struct Expr::Impl {
  std::string text;
  std::vector<std::string> names;
  std::vector<std::string> used;
  std::vector<double> values;  // the variables' storage, one per name
  mu::Parser parser;
  bool boolean = false;

  absl::StatusOr<double> Run(absl::Span<const int64_t> v) {
    if (v.size() != values.size()) {
      return absl::InvalidArgumentError(absl::StrFormat("\"%s\" needs %d values, got %d", text,
                                                        values.size(), v.size()));
    }
    for (size_t i = 0; i < v.size(); ++i) values[i] = static_cast<double>(v[i]);
    try {
      const double r = parser.Eval();
      if (!(std::fabs(r) <= kExactLimit)) throw ValueError{absl::StrFormat("value %.17g is beyond +-2^53", r)};
      return r;
    } catch (const ValueError& e) {
      return absl::InvalidArgumentError(absl::StrCat(e.message, " in \"", text, "\""));
    } catch (const mu::ParserError& e) {
      return absl::InvalidArgumentError(absl::StrCat("syntax error in \"", text, "\": ", e.GetMsg()));
    }
  }
};

Expr::Expr(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Expr::Expr(Expr&&) noexcept = default;
Expr& Expr::operator=(Expr&&) noexcept = default;
Expr::~Expr() = default;

absl::StatusOr<Expr> Expr::Compile(std::string_view text, const std::vector<std::string>& names) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return absl::InvalidArgumentError("empty expression");
  }
  const std::string text_str(text);
  auto used = UsedNames(text_str, names);
  if (!used.ok()) return used.status();
  auto impl = std::make_unique<Impl>();
  impl->text = std::string(text);
  impl->names = names;
  impl->used = *std::move(used);
  impl->values.assign(names.size(), 1.0);
  impl->boolean = TopLevelBoolean(text);
  mu::Parser& p = impl->parser;
  try {
    p.EnableBuiltInOprt(false);
    p.DefineOprt("+", Add, mu::prADD_SUB, mu::oaLEFT, true);
    p.DefineOprt("-", Sub, mu::prADD_SUB, mu::oaLEFT, true);
    p.DefineOprt("*", Mul, mu::prMUL_DIV, mu::oaLEFT, true);
    p.DefineOprt("/", Div, mu::prMUL_DIV, mu::oaLEFT, true);
    p.DefineOprt("%", Mod, mu::prMUL_DIV, mu::oaLEFT, true);
    p.DefineOprt("<", Lt, mu::prCMP, mu::oaLEFT, true);
    p.DefineOprt("<=", Le, mu::prCMP, mu::oaLEFT, true);
    p.DefineOprt(">", Gt, mu::prCMP, mu::oaLEFT, true);
    p.DefineOprt(">=", Ge, mu::prCMP, mu::oaLEFT, true);
    p.DefineOprt("==", Eq, mu::prLOGIC, mu::oaLEFT, true);  // below < as in C
    p.DefineOprt("!=", Ne, mu::prLOGIC, mu::oaLEFT, true);
    p.DefineOprt("&&", And, mu::prLAND, mu::oaLEFT, true);
    p.DefineOprt("||", Or, mu::prLOR, mu::oaLEFT, true);
    p.DefineInfixOprt("-", Neg);
    p.DefineInfixOprt("!", Not);
    p.DefineFun("ceil_div", CeilDiv);
    for (size_t i = 0; i < names.size(); ++i) p.DefineVar(names[i], &impl->values[i]);
    p.SetExpr(std::string(text));
    p.Eval();  // parses; an error of the values 1, 1, ... is Evaluate's to report
  } catch (const ValueError&) {
  } catch (const mu::ParserError& e) {
    return absl::InvalidArgumentError(absl::StrCat("syntax error in \"", text_str, "\": ", e.GetMsg()));
  }
  return Expr(std::move(impl));
}

const std::string& Expr::text() const { return impl_->text; }
const std::vector<std::string>& Expr::used() const { return impl_->used; }
bool Expr::IsBoolean() const { return impl_->boolean; }

absl::StatusOr<double> Expr::Evaluate(absl::Span<const int64_t> values) const { return impl_->Run(values); }

absl::StatusOr<int64_t> Expr::EvaluateInt(absl::Span<const int64_t> values) const {
  auto v = impl_->Run(values);
  if (!v.ok()) return v.status();
  if (*v != std::trunc(*v)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("value %.17g of \"%s\" is not an integer, where an integer is required", *v, impl_->text));
  }
  return static_cast<int64_t>(*v);
}

absl::StatusOr<bool> Expr::EvaluateBool(absl::Span<const int64_t> values) const {
  auto v = impl_->Run(values);
  if (!v.ok()) return v.status();
  if (*v != 0 && *v != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("value %.17g of \"%s\" is not boolean (0 or 1)", *v, impl_->text));
  }
  return *v == 1;
}

absl::StatusOr<int64_t> EvaluateInt(std::string_view text, const std::map<std::string, int64_t>& vars) {
  std::vector<std::string> names;
  std::vector<int64_t> values;
  for (const auto& [k, v] : vars) {
    names.push_back(k);
    values.push_back(v);
  }
  auto e = Expr::Compile(text, names);
  if (!e.ok()) return e.status();
  return e->EvaluateInt(values);
}

bool IsFunction(std::string_view name) { return Functions().contains(name); }

}  // namespace tuned::spec
