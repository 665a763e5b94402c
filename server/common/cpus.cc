#include "server/common/cpus.h"

#include <hwloc.h>
#include <pthread.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace tuned {
namespace {

struct TopologyFree {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
struct BitmapFree {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyFree>;
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapFree>;

Bitmap NewBitmap() { return Bitmap(hwloc_bitmap_alloc()); }

// A CPU list parsed; null where it is malformed.
Bitmap ParseList(std::string_view list) {
  Bitmap b = NewBitmap();
  const std::string s(list);
  if (!b || s.empty() || s.find_first_not_of("0123456789,-") != std::string::npos ||
      hwloc_bitmap_list_sscanf(b.get(), s.c_str()) != 0 || hwloc_bitmap_iszero(b.get()) ||
      hwloc_bitmap_weight(b.get()) < 0) {
    return nullptr;
  }
  return b;
}

std::string ListOf(hwloc_const_bitmap_t b) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, b) < 0 || text == nullptr) return "";
  std::string out(text);
  std::free(text);
  return out;
}

}  // namespace

int CountCpus(std::string_view list) {
  Bitmap b = ParseList(list);
  return b ? hwloc_bitmap_weight(b.get()) : -1;
}

absl::StatusOr<CpuSplit> SplitCpus(std::string_view serving, int lookup_threads,
                                   std::string_view synthetic) {
  if (serving == "all") return CpuSplit{};
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return absl::InternalError("hwloc_topology_init failed");
  Topology topo(raw);
  if (!synthetic.empty() &&
      hwloc_topology_set_synthetic(topo.get(), std::string(synthetic).c_str()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("bad synthetic topology \"", std::string(synthetic), "\""));
  }
  if (hwloc_topology_load(topo.get()) != 0) {
    return absl::InternalError(absl::StrCat("hwloc_topology_load: ", std::strerror(errno)));
  }
  Bitmap allowed = NewBitmap();
  if (synthetic.empty()) {
    if (hwloc_get_cpubind(topo.get(), allowed.get(), HWLOC_CPUBIND_PROCESS) != 0) {
      return absl::InternalError(absl::StrCat("hwloc_get_cpubind: ", std::strerror(errno)));
    }
  } else {
    hwloc_bitmap_copy(allowed.get(), hwloc_topology_get_topology_cpuset(topo.get()));
  }
  Bitmap serve;
  if (serving == "auto") {
    if (hwloc_bitmap_weight(allowed.get()) < kMinCpusToSplit) return CpuSplit{};
    serve = NewBitmap();
    const int cores = hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_CORE);
    for (int i = cores - 1; i >= 0 && hwloc_bitmap_weight(serve.get()) < lookup_threads; --i) {
      Bitmap mine = NewBitmap();
      hwloc_bitmap_and(mine.get(), hwloc_get_obj_by_type(topo.get(), HWLOC_OBJ_CORE, i)->cpuset,
                       allowed.get());
      hwloc_bitmap_or(serve.get(), serve.get(), mine.get());
    }
    // So many look-up threads that their cores would be more than half:
    // nothing pinned, rather than starve the daemon's other work.
    if (2 * hwloc_bitmap_weight(serve.get()) > hwloc_bitmap_weight(allowed.get())) return CpuSplit{};
  } else {
    serve = ParseList(serving);
    if (!serve) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--serving-cpus: \"", std::string(serving), "\" is not auto, all or a CPU list such as 12-15"));
    }
    if (!hwloc_bitmap_isincluded(serve.get(), allowed.get())) {
      return absl::InvalidArgumentError(absl::StrCat("--serving-cpus ", std::string(serving),
                                                     ": this process may run only on CPUs ",
                                                     ListOf(allowed.get())));
    }
  }
  Bitmap work = NewBitmap();
  hwloc_bitmap_andnot(work.get(), allowed.get(), serve.get());
  if (hwloc_bitmap_iszero(work.get())) {
    return absl::InvalidArgumentError(absl::StrCat("--serving-cpus ", std::string(serving),
                                                   " leaves no CPU for the daemon's other work (of ",
                                                   ListOf(allowed.get()), ")"));
  }
  return CpuSplit{ListOf(serve.get()), ListOf(work.get())};
}

absl::Status PinCallingThread(std::string_view list) {
  if (list.empty()) return absl::OkStatus();
  Bitmap b = ParseList(list);
  if (!b) return absl::InvalidArgumentError(absl::StrCat("bad CPU list \"", std::string(list), "\""));
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu = hwloc_bitmap_first(b.get()); cpu >= 0; cpu = hwloc_bitmap_next(b.get(), cpu)) {
    if (cpu >= CPU_SETSIZE) return absl::InvalidArgumentError(absl::StrCat("CPU ", cpu, " too high"));
    CPU_SET(cpu, &set);
  }
  if (const int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set); err != 0) {
    return absl::InternalError(absl::StrCat("binding to CPUs ", std::string(list), ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace tuned
