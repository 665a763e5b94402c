#include "server/worker/clock.h"

#include <dlfcn.h>

#include <chrono>

#include "absl/strings/str_cat.h"

namespace tuned {

// The NVML ABI used here (nvml.h of CUDA 12/13; these entry points are stable).
namespace {
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;  // NVML_CLOCK_SM
}  // namespace

struct GpuClock::Api {
  void* lib = nullptr;
  bool initialized = false;
  nvmlReturn_t (*init)() = nullptr;                                          // nvmlInit_v2
  nvmlReturn_t (*shutdown)() = nullptr;                                      // nvmlShutdown
  const char* (*error_string)(nvmlReturn_t) = nullptr;                       // nvmlErrorString
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;             // nvmlDeviceGetHandleByUUID
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;             // nvmlDeviceGetClockInfo
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;         // nvmlDeviceGetMaxClockInfo
  // nvmlDeviceGetCurrentClocksEventReasons (or, before driver 535, its old
  // name ...ThrottleReasons); null where neither exists.
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;

  std::string Error(std::string_view call, nvmlReturn_t r) const {
    return absl::StrCat("NVML ", std::string(call), ": ", error_string != nullptr ? error_string(r) : "error",
                        " (", r, ")");
  }
  ~Api() {
    if (initialized && shutdown != nullptr) shutdown();  // its return code matters no more
    if (lib != nullptr) dlclose(lib);
  }
};

absl::StatusOr<std::unique_ptr<GpuClock>> GpuClock::Open(const std::string& uuid) {
  auto api = std::make_unique<Api>();
  api->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api->lib == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(absl::StrCat("NVML: cannot load libnvidia-ml.so.1: ",
                                                      why != nullptr ? why : "unknown"));
  }
  auto sym = [&](const char* name, auto* fn) -> absl::Status {
    void* p = dlsym(api->lib, name);
    if (p == nullptr) return absl::FailedPreconditionError(absl::StrCat("NVML: no symbol ", name));
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
    return absl::OkStatus();
  };
  for (absl::Status s : {sym("nvmlInit_v2", &api->init), sym("nvmlShutdown", &api->shutdown),
                         sym("nvmlErrorString", &api->error_string),
                         sym("nvmlDeviceGetHandleByUUID", &api->by_uuid),
                         sym("nvmlDeviceGetClockInfo", &api->clock),
                         sym("nvmlDeviceGetMaxClockInfo", &api->max_clock)}) {
    if (!s.ok()) return s;
  }
  if (!sym("nvmlDeviceGetCurrentClocksEventReasons", &api->reasons).ok() &&
      !sym("nvmlDeviceGetCurrentClocksThrottleReasons", &api->reasons).ok()) {
    api->reasons = nullptr;  // the rule then goes by the clock alone
  }
  if (nvmlReturn_t r = api->init(); r != kNvmlSuccess) {
    return absl::FailedPreconditionError(api->Error("nvmlInit_v2", r));
  }
  api->initialized = true;
  auto clock = std::unique_ptr<GpuClock>(new GpuClock());
  if (nvmlReturn_t r = api->by_uuid(uuid.c_str(), &clock->device_); r != kNvmlSuccess) {
    return absl::FailedPreconditionError(api->Error(absl::StrCat("nvmlDeviceGetHandleByUUID ", uuid), r));
  }
  if (nvmlReturn_t r = api->max_clock(clock->device_, kNvmlClockSm, &clock->max_mhz_); r != kNvmlSuccess) {
    return absl::FailedPreconditionError(api->Error("nvmlDeviceGetMaxClockInfo", r));
  }
  clock->api_ = std::move(api);
  return clock;
}

GpuClock::~GpuClock() = default;

absl::StatusOr<unsigned> GpuClock::SmMhz() const {
  unsigned mhz = 0;
  if (nvmlReturn_t r = api_->clock(device_, kNvmlClockSm, &mhz); r != kNvmlSuccess) {
    return absl::UnavailableError(api_->Error("nvmlDeviceGetClockInfo", r));
  }
  return mhz;
}

absl::StatusOr<ClockSample> GpuClock::Sample() const {
  ClockSample sample;
  auto mhz = SmMhz();
  if (!mhz.ok()) return mhz.status();
  sample.mhz = *mhz;
  unsigned long long reasons = 0;
  if (api_->reasons != nullptr && api_->reasons(device_, &reasons) == kNvmlSuccess) {
    sample.reasons = reasons;  // else unknown: the clock alone decides
  }
  return sample;
}

void ClockSampler::Start() {
  Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    samples_.clear();
  }
  if (clock_ == nullptr) return;
  running_ = true;
  thread_ = std::thread([this] {
    while (true) {
      if (auto sample = clock_->Sample(); sample.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        samples_.push_back(*sample);
      }
      if (!running_) break;  // one last sample after Stop asked
      std::this_thread::sleep_for(std::chrono::microseconds(period_us_));
    }
  });
}

std::vector<ClockSample> ClockSampler::Stop() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

}  // namespace tuned
