// The textual parts of kernel specs: the __global__ functions of a source,
// the content hash, and the element types.
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "families/spec/spec.h"

namespace tuned::spec {

std::string SpecHash(const v1::KernelSpec& spec) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    spec.SerializeToCodedStream(&coded);
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) absl::StrAppendFormat(&hex, "%02x", digest[i]);
  return hex;
}

std::vector<std::string> GlobalKernels(std::string_view source) {
  // Comments and literals become spaces, so that their text is not scanned.
  std::string s(source);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 2, "//") == 0) {
      for (; i < s.size() && s[i] != '\n'; ++i) s[i] = ' ';
    } else if (s.compare(i, 2, "/*") == 0) {
      const size_t end = s.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? s.size() : end + 2;
      for (; i < stop; ++i) s[i] = s[i] == '\n' ? '\n' : ' ';
      --i;
    } else if (s[i] == '"' || s[i] == '\'') {
      const char q = s[i];
      for (++i; i < s.size() && s[i] != q; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) s[i++] = ' ';
        s[i] = ' ';
      }
    }
  }
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  std::vector<std::string> out;
  for (size_t at = s.find("__global__"); at != std::string::npos; at = s.find("__global__", at + 10)) {
    if ((at > 0 && ident(s[at - 1])) || (at + 10 < s.size() && ident(s[at + 10]))) continue;
    std::string last;
    for (size_t i = at + 10; i < s.size() && s[i] != ';' && s[i] != '{';) {
      if (ident(s[i])) {
        size_t j = i;
        while (j < s.size() && ident(s[j])) ++j;
        last = s.substr(i, j - i);
        i = j;
      } else if (s[i] == '(') {
        if (last != "__launch_bounds__" && last != "__cluster_dims__") {
          if (!last.empty() && std::find(out.begin(), out.end(), last) == out.end()) out.push_back(last);
          break;
        }
        for (int depth = 0; i < s.size(); ++i) {  // skip the attribute's arguments
          if (s[i] == '(') ++depth;
          if (s[i] == ')' && --depth == 0) break;
        }
        ++i;
      } else {
        ++i;
      }
    }
  }
  return out;
}

namespace {

/// The bytes of one PTX parameter declaration (".param .u64 .ptr .align 1
/// k_param_0", ".param .align 8 .b8 k_param_1[16]"); 0 when unknown.
int PtxParamBytes(std::string_view decl) {
  int element = 0;
  for (const auto& [name, bytes] : std::initializer_list<std::pair<std::string_view, int>>{
           {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}, {".u32", 4}, {".s32", 4},
           {".b32", 4}, {".f32", 4}, {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2},
           {".u8", 1}, {".s8", 1}, {".b8", 1}}) {
    const size_t at = decl.find(name);
    if (at != std::string_view::npos && (at + name.size() == decl.size() || decl[at + name.size()] == ' ')) {
      element = bytes;
      break;
    }
  }
  const size_t open = decl.rfind('[');
  if (open == std::string_view::npos) return element;
  int count = 0;
  for (size_t i = open + 1; i < decl.size() && std::isdigit(static_cast<unsigned char>(decl[i])); ++i) {
    count = count * 10 + (decl[i] - '0');
  }
  return element * count;
}

}  // namespace

absl::Status CheckKernelParameters(const v1::KernelSpec& spec, std::string_view ptx,
                                   std::string_view entry) {
  const std::string mark = absl::StrCat(".entry ", std::string(entry), "(");
  const size_t at = ptx.find(mark);
  if (at == std::string_view::npos) return absl::OkStatus();
  const size_t begin = at + mark.size();
  const size_t end = ptx.find(')', begin);
  if (end == std::string_view::npos) return absl::OkStatus();
  std::vector<int> bytes;
  for (std::string_view rest = ptx.substr(begin, end - begin); !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string_view decl = rest.substr(0, comma);
    if (decl.find(".param") != std::string_view::npos) {
      bytes.push_back(PtxParamBytes(std::string(absl::StripAsciiWhitespace(std::string(decl)))));
    }
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  const int given = spec.arguments_size();
  if (static_cast<int>(bytes.size()) != given) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "arguments: the kernel %s takes %d parameters, the spec passes %d: list one argument "
        "for each of the __global__ function's parameters, in order",
        std::string(entry), bytes.size(), given));
  }
  for (int i = 0; i < given; ++i) {
    const v1::SpecArgument& a = spec.arguments(i);
    const int want = a.has_buffer() ? 8 : TypeBytes(a.scalar().type());
    if (bytes[i] != 0 && bytes[i] != want) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "arguments[%d] (%s): the kernel's parameter %d takes %d bytes, the spec passes %s of %d "
          "bytes", i, a.name(), i, bytes[i], a.has_buffer() ? "a pointer" : TypeName(a.scalar().type()),
          want));
    }
  }
  return absl::OkStatus();
}

std::string_view TypeName(v1::SpecType type) {
  switch (type) {
    case v1::SPEC_TYPE_F32: return "f32";
    case v1::SPEC_TYPE_F64: return "f64";
    case v1::SPEC_TYPE_F16: return "f16";
    case v1::SPEC_TYPE_BF16: return "bf16";
    case v1::SPEC_TYPE_I32: return "i32";
    case v1::SPEC_TYPE_U8: return "u8";
    case v1::SPEC_TYPE_I64: return "i64";
    default: return "unspecified";
  }
}

int TypeBytes(v1::SpecType type) {
  switch (type) {
    case v1::SPEC_TYPE_F64: case v1::SPEC_TYPE_I64: return 8;
    case v1::SPEC_TYPE_F32: case v1::SPEC_TYPE_I32: return 4;
    case v1::SPEC_TYPE_F16: case v1::SPEC_TYPE_BF16: return 2;
    case v1::SPEC_TYPE_U8: return 1;
    default: return 0;
  }
}

}  // namespace tuned::spec
