// The worker's sandbox: what the compiler and worker processes may touch
// once they have started, so that a kernel spec's source (compiled by NVRTC
// in this process) reads no file of the host and reaches no other process.
//
// Linux Landlock (kernel 5.13 or later; Documentation/userspace-api/landlock.rst)
// confines the calling thread and every thread and process it starts later:
// - reads: the system's libraries (/usr, /lib, /lib64, /etc/ld.so.*), the
//   folders of the libraries this process has loaded (the CUDA toolkit's,
//   wherever it is installed), the folders the caller names (the toolkit's
//   headers), /sys, and of /proc the system's cpuinfo, meminfo and stat;
// - a compiler (SandboxRole::kCompiler) nothing more: nothing of its own
//   /proc entry (so not /proc/self/environ, cmdline, mountinfo or fd/),
//   no device but /dev/null and /dev/urandom;
// - the GPU worker also: reads of the driver's /proc/driver and of four
//   files of its own /proc entry (stat, statm, status, maps), reads and
//   writes of the NVIDIA device nodes (/dev/nvidia*, with their ioctls) and
//   /dev/shm;
// - nothing else: no other file, no TCP bind or connect (ABI 4), no signal
//   to a process outside the sandbox (ABI 6), and, as Landlock always does,
//   no ptrace of one, which keeps the daemon's /proc/PID/environ unread.
// The worker enters it after its CUDA context and NVML are up, so the
// driver's start needs no rule; the threads the driver started before are
// not confined, and they run no code of a spec.
//
// Where the kernel has no Landlock, a compiler process (--compile-only: no
// CUDA context, NVRTC only, which is where a spec's #include reads files)
// enters new user, mount and network namespaces at its start instead
// (EnterMountNamespace): its root is a read-only tmpfs holding bind mounts
// of the compiler's paths above (its /proc holds the three system files and
// no process entry: no /proc/self), so that every other file of the host
// does not exist for it, and it has no network. Other processes of its user
// stay signallable there (Landlock's scope stops that).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tuned {

/// Which process a sandbox confines (file comment): a compiler (NVRTC only)
/// or the GPU worker (the device too).
enum class SandboxRole { kCompiler, kGpuWorker };

/// Confines this thread and all it starts later as the file comment says
/// for `role`, with the folders of `also_read` readable too. Returns what
/// confines it, e.g. "Landlock ABI 7"; UNIMPLEMENTED where the kernel has no
/// Landlock (or it is off), and INTERNAL when a system call fails. Cannot be
/// undone.
absl::StatusOr<std::string> EnterSandbox(const std::vector<std::string>& also_read, SandboxRole role);

/// Whether the kernel has Landlock (EnterSandbox confines with it).
bool HasLandlock();

/// The fallback of a host without Landlock (file comment): this process,
/// which must have one thread (the start of main, or a child just forked),
/// enters new user, mount and network namespaces whose root holds only the
/// paths EnterSandbox would let a compiler read (and `also_read`), read-only
/// but for /dev/null, with no capability left. Returns "mount
/// namespace"; UNIMPLEMENTED where unprivileged user namespaces are off;
/// INTERNAL when another system call fails (the process is then in a
/// half-built namespace and should exit). Cannot be undone.
absl::StatusOr<std::string> EnterMountNamespace(const std::vector<std::string>& also_read);

}  // namespace tuned
