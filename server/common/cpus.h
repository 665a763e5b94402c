// Where the daemon's threads run: GetBest's look-up threads on CPUs of
// their own, everything else (the job runner, the GPU worker, the
// compilers, gRPC's other threads) on the rest. A compiler's NVVM and
// ptxas threads, even at idle priority, share a core's caches and its SMT
// sibling with whatever runs beside them; kept off the look-up threads'
// cores, they leave serving its latency while the daemon tunes: on an
// H200 host's 16 vCPUs the split took GetBest's p99 under three sweeps from
// 3.2 to 1.9 ms in one A/B, though a later one drowned in the hypervisor's
// steal (bench/RESULTS.md load-busy-cpus). The topology (cores and their
// hardware threads) is hwloc's.
// CPU sets are written in the kernel's list form, "0-3,8" (cpuset(7)).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tuned {

/// The daemon's CPUs split in two; both empty where nothing is pinned.
struct CpuSplit {
  std::string serving;  ///< the look-up threads' CPUs
  std::string work;     ///< every other thread's and child process's CPUs
};

/// Below this many CPUs the daemon pins nothing: a quarter of them would
/// leave the job runner and the compilers too little.
inline constexpr int kMinCpusToSplit = 8;

/// Splits the CPUs this process may run on. `serving`:
/// - "auto": whole cores, the last ones of the machine, until they hold at
///   least `lookup_threads` hardware threads (with their SMT siblings, so
///   that no compiler shares a core with a look-up thread); nothing where
///   the process may run on fewer than kMinCpusToSplit CPUs, or where those
///   cores would be more than half of its CPUs;
/// - "all": nothing pinned;
/// - a CPU list: those CPUs serve, the others work.
/// `synthetic`, for tests: an hwloc synthetic topology such as
/// "pack:2 core:8 pu:2", all of whose CPUs count as allowed.
/// INVALID_ARGUMENT for a malformed list, one naming a CPU the process may
/// not use, or one leaving no CPU to work on; INTERNAL where hwloc fails.
absl::StatusOr<CpuSplit> SplitCpus(std::string_view serving, int lookup_threads,
                                   std::string_view synthetic = "");

/// The number of CPUs in a list ("0-3,8": 5); -1 where it is malformed.
int CountCpus(std::string_view list);

/// Binds the calling thread to the CPUs of `list`; threads and processes it
/// starts later inherit the binding. Does nothing for an empty list.
/// INVALID_ARGUMENT for a malformed list; INTERNAL where the kernel refuses.
absl::Status PinCallingThread(std::string_view list);

}  // namespace tuned
