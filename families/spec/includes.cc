// What a kernel spec's source may read at compile time: the CUDA toolkit's
// headers by name, and nothing else. NVRTC opens any path an #include names
// (relative ones from the worker's current folder) and quotes the file in its
// error log. The compiler's sandbox (server/worker/sandbox.h) is what keeps
// the host's files out of reach; this check refuses such a source at
// registration with a clear message, before any compile.
// It reads the source as the preprocessor's translation phases 1 to 3 do:
// line splices, comments, string and character literals (raw ones, whose
// text is not spliced, included), pp-numbers with digit separators, and the
// %: digraph; then refuses every directive or operator that opens a file,
// unless it names an allowed header, and an identifier from which ## could
// paste one.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "families/spec/spec.h"

namespace tuned::spec {
namespace {

absl::Status Refuse(int line, std::string_view what, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("source: line ", line, ": ", std::string(what), ": ",
                                                 std::string(why)));
}

/// One logical line as the preprocessor's directives see it: comments
/// replaced by a space, raw string literals by `""`, other literals kept;
/// `line` is the physical line it starts on.
struct LogicalLine {
  int line = 1;
  std::string text;
};

/// The source as phase 4 sees it, and what the ## check needs.
struct Lexed {
  std::vector<LogicalLine> lines;
  bool pastes = false;                                     // a ## (or %:%:) outside literals
  std::vector<std::pair<int, std::string>> identifiers;  // each identifier token and its line
};

bool IdChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}

/// Whether `text`, a logical line so far, is a directive that takes a
/// header name next: # include, include_next, import or embed (or %: ...).
bool IncludeSoFar(std::string_view text) {
  size_t i = text.find_first_not_of(" \t\f\v");
  if (i == std::string_view::npos) return false;
  if (text.substr(i, 1) == "#") {
    i += 1;
  } else if (text.substr(i, 2) == "%:") {
    i += 2;
  } else {
    return false;
  }
  i = text.find_first_not_of(" \t\f\v", i);
  if (i == std::string_view::npos) return false;
  const size_t end = text.find_last_not_of(" \t\f\v");
  const std::string_view word = text.substr(i, end + 1 - i);
  return word == "include" || word == "include_next" || word == "import" || word == "embed";
}

/// Translation phases 1 to 3 of `in`. INVALID_ARGUMENT for what compilers
/// read differently, so that the check and NVRTC could disagree: a carriage
/// return outside a CRLF line end, a backslash followed by blanks before
/// the line's end (GCC takes it for a splice), a universal character name
/// outside a literal (`\u0041` may spell a name), and a raw string literal
/// without its end, with a bad delimiter or over several lines.
absl::StatusOr<Lexed> Lex(std::string_view in) {
  // Phase 1: CRLF line ends become LF.
  std::string src;
  src.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\r') {
      src += in[i];
    } else if (i + 1 >= in.size() || in[i + 1] != '\n') {
      return Refuse(1 + static_cast<int>(std::count(in.begin(), in.begin() + i, '\n')), "a carriage return",
                    "only at a line's end, before its line feed");
    }
  }
  // Phase 2: splices removed; each character keeps its physical line and its
  // offset in `src` (a raw string is read from there, unspliced).
  std::string t;
  std::vector<int> line_of;
  std::vector<size_t> offset_of;
  int line = 1;
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\\') {
      size_t j = i + 1;
      while (j < src.size() && (src[j] == ' ' || src[j] == '\t')) ++j;
      if (j < src.size() && src[j] == '\n') {
        if (j > i + 1) return Refuse(line, "a backslash before blanks at the line's end", "remove the blanks");
        ++line;
        ++i;
        continue;
      }
    }
    t += src[i];
    line_of.push_back(line);
    offset_of.push_back(i);
    if (src[i] == '\n') ++line;
  }
  // Phase 3: tokens, as far as the check needs them.
  Lexed out;
  out.lines.push_back({1, ""});
  size_t k = 0;
  auto peek = [&](size_t at) { return at < t.size() ? t[at] : '\0'; };
  while (k < t.size()) {
    const char c = t[k];
    std::string& cur = out.lines.back().text;
    if (c == '\n') {
      out.lines.push_back({line_of[k] + 1, ""});
      ++k;
    } else if (c == '/' && peek(k + 1) == '/') {
      while (k < t.size() && t[k] != '\n') ++k;
      cur += ' ';
    } else if (c == '/' && peek(k + 1) == '*') {
      const size_t end = t.find("*/", k + 2);
      k = end == std::string::npos ? t.size() : end + 2;
      cur += ' ';
    } else if (c == '<' && IncludeSoFar(cur)) {
      // A header name: <a//b> or <a/*b> holds no comment.
      size_t j = k + 1;
      while (j < t.size() && t[j] != '>' && t[j] != '\n') ++j;
      if (j < t.size() && t[j] == '>') ++j;
      cur.append(t, k, j - k);
      k = j;
    } else if (c == '"' || c == '\'') {
      size_t j = k + 1;
      while (j < t.size() && t[j] != c && t[j] != '\n') j += t[j] == '\\' ? 2 : 1;
      j = std::min(j, t.size());
      if (j < t.size() && t[j] == c) ++j;
      cur.append(t, k, j - k);
      k = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && std::isdigit(static_cast<unsigned char>(peek(k + 1))))) {
      // A pp-number: 1'000, 0x1p-3, 1.5e+3f; a ' between its characters is
      // a digit separator, not a character literal.
      size_t j = k + 1;
      while (j < t.size()) {
        if (IdChar(t[j]) || t[j] == '.') {
          ++j;
        } else if (t[j] == '\'' && IdChar(peek(j + 1))) {
          j += 2;
        } else if ((t[j] == '+' || t[j] == '-') && std::string_view("eEpP").find(t[j - 1]) != std::string_view::npos) {
          ++j;
        } else {
          break;
        }
      }
      cur.append(t, k, j - k);
      k = j;
    } else if (IdChar(c)) {
      size_t j = k;
      while (j < t.size() && IdChar(t[j])) ++j;
      const std::string word = t.substr(k, j - k);
      out.identifiers.emplace_back(line_of[k], word);
      cur += word;
      k = j;
      if (peek(k) != '"' || (word != "R" && word != "LR" && word != "uR" && word != "UR" && word != "u8R")) {
        continue;
      }
      // A raw string literal: R"delim( ... )delim", read in the unspliced text.
      const size_t quote = offset_of[k];
      const size_t open = src.find('(', quote + 1);
      const std::string delim = open == std::string::npos ? "" : src.substr(quote + 1, open - quote - 1);
      if (open == std::string::npos || delim.size() > 16 ||
          delim.find_first_of(" \t\n\\()\"") != std::string::npos) {
        return Refuse(line_of[k], "a raw string literal", "its delimiter is not 0 to 16 plain characters before (");
      }
      const size_t close = src.find(absl::StrCat(")", delim, "\""), open + 1);
      if (close == std::string::npos) return Refuse(line_of[k], "a raw string literal", "it has no end");
      if (src.find('\n', open) < close) {
        // Within a directive, compilers differ on where it ends.
        return Refuse(line_of[k], "a raw string literal", "one line at most");
      }
      const size_t after = close + delim.size() + 2;
      cur += "\"\"";
      k = static_cast<size_t>(std::lower_bound(offset_of.begin(), offset_of.end(), after) - offset_of.begin());
    } else if (c == '\\' && (peek(k + 1) == 'u' || peek(k + 1) == 'U')) {
      return Refuse(line_of[k], "a universal character name outside a literal", "spell the name in UTF-8");
    } else {
      if ((c == '#' && peek(k + 1) == '#') || t.compare(k, 4, "%:%:") == 0) out.pastes = true;
      cur += c;
      ++k;
    }
  }
  return out;
}

/// Whether `name` (the text between < and >) is a header of the CUDA
/// toolkit that kernels use: cuda_*.h and cuda/... (libcu++), the
/// cooperative groups, mma.h, the vector types and the math constants.
bool AllowedHeader(std::string_view name) {
  if (name.empty() || name.find("..") != std::string_view::npos || name.front() == '/') return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '/' || c == '.')) return false;
  }
  for (std::string_view prefix : {"cuda_", "cuda/", "cooperative_groups", "crt/"}) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  for (std::string_view exact : {"mma.h", "vector_types.h", "vector_functions.h", "math_constants.h",
                                 "sm_20_intrinsics.h", "sm_30_intrinsics.h", "sm_32_intrinsics.h",
                                 "sm_60_atomic_functions.h", "sm_61_intrinsics.h"}) {
    if (name == exact) return true;
  }
  return false;
}

/// The pragmas a kernel may use; others (GCC's dependency, include_alias,
/// ...) may name files.
bool AllowedPragma(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t j = i;
  while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
  const std::string_view word = text.substr(i, j - i);
  for (std::string_view ok : {"unroll", "nounroll", "once", "pack", "nv_diag_suppress",
                              "nv_diag_default", "nv_diag_warning", "nv_diag_error", "nv_diag_once",
                              "diag_suppress", "diag_default", "diag_warning"}) {
    if (word == ok) return true;
  }
  return false;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

constexpr std::string_view kHeaders =
    "a kernel spec's source may include the CUDA toolkit's headers only, by name "
    "(<cuda_fp16.h>, <cuda_bf16.h>, <mma.h>, <cooperative_groups.h>, <cuda/...>)";

}  // namespace

absl::Status CheckSourceReads(std::string_view source) {
  auto lexed = Lex(source);
  if (!lexed.ok()) return lexed.status();
  // ## pastes an identifier from pieces; the first piece is a prefix of it.
  if (lexed->pastes) {
    for (const auto& [line, word] : lexed->identifiers) {
      for (std::string_view op : {"__has_include", "__has_include_next", "__has_embed", "_Pragma"}) {
        if (word.size() < op.size() && op.starts_with(word)) {
          return Refuse(line, word, absl::StrCat("with ## it could paste ", std::string(op),
                                                 ", which opens files; rename it"));
        }
      }
    }
  }
  for (const LogicalLine& logical : lexed->lines) {
    const int this_line = logical.line;
    const std::string_view raw = logical.text;
    std::string_view l = Trim(raw);
    // Operators that open files, anywhere in a line (in #if, in macros).
    for (std::string_view op : {"__has_include", "__has_include_next", "__has_embed"}) {
      if (l.find(op) != std::string_view::npos) {
        return Refuse(this_line, op, "it opens files; a kernel spec's source reads none");
      }
    }
    for (size_t at = l.find("_Pragma"); at != std::string_view::npos; at = l.find("_Pragma", at + 1)) {
      const size_t open = l.find('"', at);
      if (open == std::string_view::npos || !AllowedPragma(l.substr(open + 1))) {
        return Refuse(this_line, "_Pragma", "only unroll, nounroll, once, pack and diagnostic pragmas");
      }
    }
    if (l.substr(0, 1) == "#") {
      l.remove_prefix(1);
    } else if (l.substr(0, 2) == "%:") {
      l.remove_prefix(2);
    } else {
      continue;
    }
    l = Trim(l);
    size_t n = 0;
    while (n < l.size() && (std::isalnum(static_cast<unsigned char>(l[n])) || l[n] == '_')) ++n;
    const std::string_view directive = l.substr(0, n);
    const std::string_view rest = Trim(l.substr(n));
    if (directive == "pragma") {
      if (!AllowedPragma(rest)) {
        return Refuse(this_line, absl::StrCat("#pragma ", std::string(rest)),
                      "only unroll, nounroll, once, pack and diagnostic pragmas");
      }
    } else if (directive == "include_next" || directive == "import" || directive == "embed") {
      return Refuse(this_line, absl::StrCat("#", std::string(directive)), kHeaders);
    } else if (directive == "include") {
      const std::string shown = absl::StrCat("#include ", std::string(rest));
      if (rest.size() < 2 || rest.front() != '<' || rest.find('>') == std::string_view::npos) {
        return Refuse(this_line, shown, rest.substr(0, 1) == "\"" ? kHeaders
                                        : "an include that names no <header> (a macro) is refused");
      }
      if (!AllowedHeader(rest.substr(1, rest.find('>') - 1))) return Refuse(this_line, shown, kHeaders);
    }
  }
  return absl::OkStatus();
}

}  // namespace tuned::spec
