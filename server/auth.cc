#include "server/auth.h"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/paths.h"
#include "core/status.h"
#include "grpc/grpc_security_constants.h"

namespace tuned {
namespace {

constexpr size_t kMinTokenLength = 16;
constexpr size_t kMaxNameLength = 64;

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

// Equal strings, in time that depends only on the lengths.
bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", what, " ", path));
  std::ostringstream s;
  s << in.rdbuf();
  if (s.str().find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, " is not a PEM file"));
  }
  return s.str();
}

}  // namespace

absl::StatusOr<TokenTable> TokenTable::Load(const std::string& path) {
  TUNED_RETURN_IF_ERROR(CheckSecretFile(path, "token file"));
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read token file ", path));
  TokenTable table;
  std::set<std::string> names;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string stripped(absl::StripAsciiWhitespace(line));
    const std::string_view l = stripped;
    if (l.empty() || l.front() == '#') continue;
    const size_t colon = l.find(':');
    const std::string_view name = l.substr(0, colon == std::string_view::npos ? 0 : colon);
    std::string_view token = colon == std::string_view::npos ? "" : l.substr(colon + 1);
    std::string_view scopes;
    if (const size_t space = token.find_first_of(" \t"); space != std::string_view::npos) {
      scopes = token.substr(space);
      token = token.substr(0, space);
    }
    auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("token file ", path, " line ", n, ": ", std::string(why)));
    };
    if (!ValidName(name)) return bad("expected NAME:TOKEN, NAME of [A-Za-z0-9._-], 1 to 64 long");
    if (token.size() < kMinTokenLength) {
      return bad(absl::StrCat("token shorter than ", kMinTokenLength, " characters"));
    }
    for (char c : token) {
      if (absl::ascii_isspace(static_cast<unsigned char>(c)) || !absl::ascii_isprint(static_cast<unsigned char>(c))) {
        return bad("token has a space or an unprintable character");
      }
    }
    if (!names.insert(std::string(name)).second) return bad(absl::StrCat("name '", std::string(name), "' given twice"));
    const std::vector<std::string> granted =
        absl::StrSplit(std::string(scopes), absl::ByAnyChar(", \t"), absl::SkipEmpty());
    for (const std::string& scope : granted) {
      if (scope != kRegisterScope) {
        return bad(absl::StrCat("unknown scope '", scope, "' (known: ", std::string(kRegisterScope), ")"));
      }
      table.scopes_[std::string(name)].insert(scope);
    }
    if (!table.names_.emplace(std::string(token), std::string(name)).second) {
      return bad("token given twice");
    }
  }
  if (table.names_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("token file ", path, " has no NAME:TOKEN line"));
  }
  return table;
}

std::optional<std::string> TokenTable::NameOf(std::string_view token) const {
  std::optional<std::string> found;
  for (const auto& [t, name] : names_) {  // every entry, whatever matches
    if (ConstantTimeEqual(t, token)) found = name;
  }
  return found;
}

bool TokenTable::HasScope(std::string_view name, std::string_view scope) const {
  auto it = scopes_.find(std::string(name));
  return it != scopes_.end() && it->second.contains(std::string(scope));
}

std::string BearerToken(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return "";
  const std::string value(it->second.data(), it->second.size());
  constexpr std::string_view kPrefix = "Bearer ";
  if (!value.starts_with(kPrefix)) return "";
  return value.substr(kPrefix.size());
}

bool ChangesState(std::string_view method_path) {
  return method_path == "/tuned.v1.Tuner/SubmitSweep" ||
         method_path == "/tuned.v1.Tuner/CancelJob" ||
         method_path == "/tuned.v1.Tuner/ImportKernel" ||
         method_path == "/tuned.v1.Tuner/RegisterFamily";
}

grpc::Status TokenAuthProcessor::Process(const InputMetadata& auth_metadata, grpc::AuthContext*,
                                         OutputMetadata*, OutputMetadata*) {
  std::string_view path;
  if (auto it = auth_metadata.find(":path"); it != auth_metadata.end()) {
    path = std::string_view(it->second.data(), it->second.size());
  }
  const std::string token = BearerToken(auth_metadata);
  if (!token.empty()) {
    if (tokens_->NameOf(token)) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid token");
  }
  if (path.starts_with("/grpc.health.v1.Health/")) return grpc::Status::OK;
  // Without the method's path, a call counts as one that changes state.
  if (path.empty() || ChangesState(path)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        absl::StrCat(path.empty() ? std::string("this call") : std::string(path),
                                     " needs a token (tunectl --token or TUNED_TOKEN)"));
  }
  if (!allow_anonymous_reads_) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "this daemon needs a token for every call (tunectl --token or TUNED_TOKEN)");
  }
  return grpc::Status::OK;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const TlsFiles& files, std::shared_ptr<const TokenTable> tokens, bool allow_anonymous_reads) {
  auto cert = ReadPem(files.cert, "TLS certificate");
  if (!cert.ok()) return cert.status();
  TUNED_RETURN_IF_ERROR(CheckSecretFile(files.key, "TLS key"));
  auto key = ReadPem(files.key, "TLS key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!files.client_ca.empty()) {
    auto ca = ReadPem(files.client_ca, "client CA");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  auto creds = grpc::SslServerCredentials(options);
  creds->SetAuthMetadataProcessor(
      std::make_shared<TokenAuthProcessor>(std::move(tokens), allow_anonymous_reads));
  return creds;
}

std::optional<std::string> CallerOf(const grpc::ServerContextBase& ctx, const TokenTable* tokens) {
  const auto auth = ctx.auth_context();
  const bool tls = auth != nullptr &&
                   !auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME).empty() &&
                   auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME)[0] ==
                       GRPC_SSL_TRANSPORT_SECURITY_TYPE;
  if (!tls) return std::string(kLocalClient);
  if (tokens == nullptr) return std::nullopt;
  const std::string token = BearerToken(ctx.client_metadata());
  if (token.empty()) return std::nullopt;
  return tokens->NameOf(token);
}

}  // namespace tuned
