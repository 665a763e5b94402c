// Who may call the daemon over TCP, and who a call comes from.
//
// TCP is served only with TLS (server certificate; client certificates too
// with --tls-client-ca) and bearer tokens: each call sends
// "authorization: Bearer <token>" (grpc::AccessTokenCredentials). The token
// file has one client per line, NAME:TOKEN ('#' comments and blank lines
// ignored); NAME ([A-Za-z0-9._-], up to 64) is the client's identity for
// quotas and jobs.client, TOKEN is at least 16 characters without spaces
// (e.g. `openssl rand -hex 32`). A line may end in scopes, comma-separated
// after a space, that permit more: "register" (RegisterFamily: a kernel
// spec is code that runs on the GPU host), e.g. `alice:3f9c... register`. The Unix socket (mode 0660) needs no token:
// its callers are "local".
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/auth_metadata_processor.h"

namespace tuned {

/// Identity of every caller on the Unix socket.
inline constexpr std::string_view kLocalClient = "local";
/// The scope a TCP client's token needs to register kernel specs.
inline constexpr std::string_view kRegisterScope = "register";

/// The clients' tokens, loaded from a token file (format above).
class TokenTable {
 public:
  /// INVALID_ARGUMENT naming the line for a malformed line, a short token, or a
  /// name or token given twice; NOT_FOUND if the file cannot be read; an
  /// empty file is INVALID_ARGUMENT too (nobody could call); PERMISSION_DENIED
  /// for a file others may read (CheckSecretFile, core/paths.h).
  static absl::StatusOr<TokenTable> Load(const std::string& path);
  /// The client name of `token`, or nullopt. Compares in constant time per entry.
  std::optional<std::string> NameOf(std::string_view token) const;
  size_t size() const { return names_.size(); }
  /// Whether the client `name`'s line grants `scope` (e.g. kRegisterScope).
  bool HasScope(std::string_view name, std::string_view scope) const;

 private:
  std::map<std::string, std::string> names_;  // token -> name
  std::map<std::string, std::set<std::string>> scopes_;  // name -> scopes
};

/// The token of a call's metadata ("authorization: Bearer <token>"), or "".
std::string BearerToken(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

/// True for the calls that change state and so always need a token over TCP:
/// "/tuned.v1.Tuner/SubmitSweep", ".../CancelJob", ".../ImportKernel",
/// ".../RegisterFamily".
bool ChangesState(std::string_view method_path);

/// Checks the bearer token of every call on the TLS port, before the handler
/// runs: a token that is not in the table is UNAUTHENTICATED; a call without
/// one is UNAUTHENTICATED if it changes state, or if anonymous reads are not
/// allowed (health checks always pass).
class TokenAuthProcessor final : public grpc::AuthMetadataProcessor {
 public:
  TokenAuthProcessor(std::shared_ptr<const TokenTable> tokens, bool allow_anonymous_reads)
      : tokens_(std::move(tokens)), allow_anonymous_reads_(allow_anonymous_reads) {}
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed, OutputMetadata* response) override;

 private:
  std::shared_ptr<const TokenTable> tokens_;
  bool allow_anonymous_reads_;
};

/// TLS material of the TCP port (PEM files).
struct TlsFiles {
  std::string cert;       // server certificate chain
  std::string key;        // its private key
  std::string client_ca;  // if set: clients must present a certificate signed by it
};

/// Server credentials for the TCP port: TLS from `files`, tokens checked by a
/// TokenAuthProcessor. NOT_FOUND / INVALID_ARGUMENT naming the file that
/// cannot be read or is empty; PERMISSION_DENIED for a key others may read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const TlsFiles& files, std::shared_ptr<const TokenTable> tokens, bool allow_anonymous_reads);

/// The caller of a call: "local" on the Unix socket; on the TLS port the name
/// of the call's token, or nullopt for an anonymous read (the processor has
/// already refused unknown tokens). `tokens` may be null when there is no TCP port.
std::optional<std::string> CallerOf(const grpc::ServerContextBase& ctx, const TokenTable* tokens);

}  // namespace tuned
