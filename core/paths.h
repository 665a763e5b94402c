// Default locations shared by the daemon and tunectl.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tuned {

/// Unix socket of the daemon that owns GPU `gpu`:
/// $XDG_RUNTIME_DIR/tuned/gpu<N>.sock, else /tmp/tuned-<uid>/gpu<N>.sock.
std::string DefaultSocketPath(int gpu);
/// Database of the daemon that owns GPU `gpu`:
/// $XDG_STATE_HOME/tuned/gpu<N>.db, else $HOME/.local/state/tuned/gpu<N>.db.
std::string DefaultDbPath(int gpu);

/// OK if the secret file `path` (a token file, a TLS private key; `what`
/// names it in the message) is neither readable by others nor writable by
/// anyone but its owner, as ssh asks of a private key (the group may read it:
/// a service's group, a Kubernetes Secret's fsGroup). PERMISSION_DENIED
/// naming the mode and the chmod otherwise; NOT_FOUND where it cannot be
/// stat'ed.
absl::Status CheckSecretFile(const std::string& path, absl::string_view what);

}  // namespace tuned
