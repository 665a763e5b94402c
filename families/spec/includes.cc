// What a kernel spec's source may read at compile time: the CUDA toolkit's
// headers by name, and nothing else. NVRTC opens any path an #include names
// (relative ones from the worker's current folder) and quotes the file in its
// error log, so a spec could otherwise have the daemon's environment
// (/proc/self/environ), its token file or its TLS key sent back in an error.
// The check reads the source as the preprocessor does (line splices,
// comments, the %: digraph) and refuses every directive or operator that
// opens a file, unless it names an allowed header.
#include <cctype>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "families/spec/spec.h"

namespace tuned::spec {
namespace {

/// The source as the preprocessor's directives see it: line splices
/// removed and each comment replaced by a space (translation phases 2 and
/// 3), string and character literals kept whole. The physical lines a
/// splice or a comment took are kept as '\r' at the end of the logical line
/// (before its '\n'), so that line numbers still count them.
std::string Preprocessed(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  int pending = 0;  // physical line ends swallowed in the current logical line
  auto newline = [&] {
    out.append(static_cast<size_t>(pending), '\r');
    pending = 0;
    out += '\n';
  };
  // The character at i with splices skipped; i moves past them.
  auto at = [&](size_t& i) -> int {
    while (i + 1 < in.size() && in[i] == '\\' && in[i + 1] == '\n') {
      i += 2;
      ++pending;
    }
    return i < in.size() ? in[i] : -1;
  };
  for (size_t i = 0;; ++i) {
    const int c = at(i);
    if (c < 0) break;
    size_t j = i + 1;
    const int next = at(j);
    if (c == '\n') {
      newline();
    } else if (c == '"' || c == '\'') {
      out += static_cast<char>(c);
      for (++i; at(i) >= 0 && in[i] != c && in[i] != '\n'; ++i) {
        out += in[i];
        if (in[i] == '\\' && i + 1 < in.size()) out += in[++i];
      }
      if (i < in.size() && in[i] == c) out += in[i];
      if (i < in.size() && in[i] == '\n') newline();
    } else if (c == '/' && next == '/') {
      i = j;
      while (i + 1 < in.size() && in[i + 1] != '\n') {
        ++i;
        at(i);
      }
      out += ' ';
    } else if (c == '/' && next == '*') {
      for (i = j + 1; at(i) >= 0; ++i) {
        size_t k = i + 1;
        if (in[i] == '*' && at(k) == '/') {
          i = k;
          break;
        }
        pending += in[i] == '\n';
      }
      out += ' ';
    } else {
      out += static_cast<char>(c);
    }
  }
  out.append(static_cast<size_t>(pending), '\r');
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

absl::Status Refuse(int line, std::string_view what, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("source: line ", line, ": ", std::string(what), ": ",
                                                 std::string(why)));
}

constexpr std::string_view kHeaders =
    "a kernel spec's source may include the CUDA toolkit's headers only, by name "
    "(<cuda_fp16.h>, <cuda_bf16.h>, <mma.h>, <cooperative_groups.h>, <cuda/...>)";

}  // namespace

absl::Status CheckSourceReads(std::string_view source) {
  const std::string text = Preprocessed(source);
  int line = 1;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view raw(text.data() + start, end - start);
    const int this_line = line;
    for (char c : raw) line += c == '\r';
    ++line;
    start = end + 1;
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
