// Helpers shared by the job runner's files (server/jobs*.cc); not a public
// header.
#pragma once

#include "db/store.h"
#include "families/family.h"
#include "tuned/v1/worker.pb.h"

namespace tuned::jobs_internal {

/// The compile cache's key of a kernel for the device (server/jobs/compile.cc).
CompileKey KeyOf(const v1::worker::Kernel& k, const v1::Device& device);

/// GFLOPS or GB/s of a run of `ms` milliseconds (Family::Work); 0 if none.
inline double MetricOf(const Family& family, const Shape& shape, double ms) {
  return ms > 0 ? family.Work(shape) / (ms * 1e6) : 0;
}

}  // namespace tuned::jobs_internal
