// Every RPC of tuned.v1.Tuner, and grpc.health.v1's Check and Watch, through
// the daemon's services, in process: the first byte picks the method, the
// rest is its request message (binary protobuf).
// The service runs over a seeded SQLite store with a compile-only worker's
// device (fuzz/service_harness.h); a sweep that passes every check is queued
// and never run, and the store is put back after each call that changed it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/service_harness.h"

using tuned::fuzz::ServiceHarness;
namespace v1 = tuned::v1;

namespace {

// TUNED_FUZZ_VERBOSE=1: each call's method and status on stderr (reproducing an input).
const bool kVerbose = [] {
  const char* v = std::getenv("TUNED_FUZZ_VERBOSE");
  return v != nullptr && *v == '1';
}();

void Report(const char* method, const grpc::Status& s) {
  if (kVerbose) fprintf(stderr, "%s: %d %s\n", method, static_cast<int>(s.error_code()), s.error_message().c_str());
}

// Calls `method` of `stub` with the request parsed from `bytes`; false if
// the bytes are not a message of its type.
template <typename Request, typename Response, typename Stub, typename Method>
bool CallOn(Stub& stub, const std::string& bytes, Method method) {
  Request req;
  if (!req.ParseFromString(bytes)) return false;
  Response resp;
  Report(Request::descriptor()->name().c_str(), (stub.*method)(ServiceHarness::Context().get(), req, &resp));
  return true;
}

// CallOn the tuned.v1.Tuner stub.
template <typename Request, typename Response, typename Method>
bool Call(const std::string& bytes, Method method) {
  return CallOn<Request, Response>(ServiceHarness::Get().stub(), bytes, method);
}

bool Watch(const std::string& bytes) {
  v1::GetJobRequest req;
  if (!req.ParseFromString(bytes)) return false;
  auto ctx = ServiceHarness::Context();
  auto reader = ServiceHarness::Get().stub().WatchJob(ctx.get(), req);
  v1::JobEvent event;
  while (reader->Read(&event)) {
  }
  Report("WatchJob", reader->Finish());
  return true;
}

// A health Watch: its first status, then the call cancelled (a watch
// otherwise lasts until the status changes or the server stops).
bool WatchHealth(const std::string& bytes) {
  grpc::health::v1::HealthCheckRequest req;
  if (!req.ParseFromString(bytes)) return false;
  auto ctx = ServiceHarness::Context();
  auto reader = ServiceHarness::Get().health().Watch(ctx.get(), req);
  grpc::health::v1::HealthCheckResponse first;
  reader->Read(&first);
  ctx->TryCancel();
  while (reader->Read(&first)) {
  }
  Report("Health.Watch", reader->Finish());
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tuned::fuzz::MaybeWriteSeeds();
  ServiceHarness::Get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return -1;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  using S = v1::Tuner::Stub;
  bool parsed = false;
  switch (data[0] % 17) {
    case 0: parsed = Call<v1::SubmitSweepRequest, v1::Job>(bytes, &S::SubmitSweep); break;
    case 1: parsed = Call<v1::GetJobRequest, v1::Job>(bytes, &S::GetJob); break;
    case 2: parsed = Watch(bytes); break;
    case 3: parsed = Call<v1::CancelJobRequest, v1::Job>(bytes, &S::CancelJob); break;
    case 4: parsed = Call<v1::ListJobsRequest, v1::ListJobsResponse>(bytes, &S::ListJobs); break;
    case 5: parsed = Call<v1::GetBestRequest, v1::BestKernel>(bytes, &S::GetBest); break;
    case 6:
      parsed = Call<v1::ListMeasurementsRequest, v1::ListMeasurementsResponse>(bytes, &S::ListMeasurements);
      break;
    case 7: parsed = Call<v1::DescribeDeviceRequest, v1::Device>(bytes, &S::DescribeDevice); break;
    case 8: parsed = Call<v1::ListTunedRequest, v1::ListTunedResponse>(bytes, &S::ListTuned); break;
    case 9: parsed = Call<v1::ImportKernelRequest, v1::Job>(bytes, &S::ImportKernel); break;
    case 10: parsed = Call<v1::ListDaemonsRequest, v1::ListDaemonsResponse>(bytes, &S::ListDaemons); break;
    case 11: parsed = Call<v1::RegisterFamilyRequest, v1::FamilyInfo>(bytes, &S::RegisterFamily); break;
    case 12: parsed = Call<v1::ListFamiliesRequest, v1::ListFamiliesResponse>(bytes, &S::ListFamilies); break;
    case 13: parsed = Call<v1::GetFamilyRequest, v1::FamilyInfo>(bytes, &S::GetFamily); break;
    case 14: parsed = Call<v1::DescribePriorRequest, v1::PriorInfo>(bytes, &S::DescribePrior); break;
    case 15:
      parsed = CallOn<grpc::health::v1::HealthCheckRequest, grpc::health::v1::HealthCheckResponse>(
          ServiceHarness::Get().health(), bytes, &grpc::health::v1::Health::Stub::Check);
      break;
    case 16: parsed = WatchHealth(bytes); break;
  }
  if (!parsed) return -1;  // not a request of that method: not worth keeping
  ServiceHarness::Get().ResetIfChanged();
  return 0;
}
