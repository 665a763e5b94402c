#include "families/kernel_text.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tuned::embedded {
// The families' kernel files, embedded at build time (cmake/family.cmake).
extern const std::pair<std::string_view, const char*> kKernelFiles[];
extern const int kKernelFileCount;
}  // namespace tuned::embedded

namespace tuned {

absl::StatusOr<std::string_view> KernelFileText(std::string_view part) {
  for (int i = 0; i < embedded::kKernelFileCount; ++i) {
    const auto& [name, text] = embedded::kKernelFiles[i];
    if (name == part) return std::string_view(text);
  }
  const size_t slash = part.find('/');
  const std::string path =
      slash == std::string_view::npos
          ? std::string(part)
          : absl::StrCat("kernels_src/", std::string(part));
  return absl::NotFoundError(absl::StrCat("no kernel file ", path));
}

std::string SourceText(const KernelSource& source) {
  if (source.parts.empty()) return source.text;
  std::string text;
  for (size_t i = 0; i < source.parts.size(); ++i) {
    if (i > 0) text += "\n";
    const auto part = KernelFileText(source.parts[i]);
    if (part.ok()) {
      text += *part;
    } else {
      absl::StrAppend(&text, "#error \"", part.status().message(), "\"\n");
    }
  }
  return text;
}

std::optional<v1::KernelSpec> SpecWithSource(const Family& family) {
  const v1::KernelSpec* spec = family.spec();
  if (spec == nullptr) return std::nullopt;
  v1::KernelSpec out = *spec;
  if (std::vector<std::string> parts = family.builtin_parts(); !parts.empty()) {
    out.set_source(SourceText(KernelSource{.parts = std::move(parts)}));
  }
  return out;
}

}  // namespace tuned
