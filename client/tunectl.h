// tunectl's command line and commands, callable from a program (its main,
// client/tunectl_main.cc; the fuzzer, fuzz/tunectl_fuzz.cc).
#pragma once

#include <string>

namespace tuned {

/// Runs tunectl with `argv` (argv[0] is the program's name) and returns its
/// exit status: 0 done, 1 the daemon refused or failed the request, 2 a usage
/// error (nothing sent to the daemon). Prints as tunectl does.
/// `server_override`, if set, is the address every command dials, whatever
/// --server and TUNED_SERVER say (the fuzzer: a socket that does not exist).
int RunTunectl(int argc, char** argv, const std::string& server_override = "");

}  // namespace tuned
