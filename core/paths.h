// Default locations shared by the daemon and tunectl.
#pragma once

#include <string>

namespace tuned {

/// Unix socket of the daemon that owns GPU `gpu`:
/// $XDG_RUNTIME_DIR/tuned/gpu<N>.sock, else /tmp/tuned-<uid>/gpu<N>.sock.
std::string DefaultSocketPath(int gpu);
/// Database of the daemon that owns GPU `gpu`:
/// $XDG_STATE_HOME/tuned/gpu<N>.db, else $HOME/.local/state/tuned/gpu<N>.db.
std::string DefaultDbPath(int gpu);

}  // namespace tuned
