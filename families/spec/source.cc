// The textual parts of kernel specs: the __global__ functions of a source,
// the content hash, and the element types.
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

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
