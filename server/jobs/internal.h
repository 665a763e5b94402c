// Helpers shared by the job runner's files (server/jobs*.cc); not a public
// header.
#pragma once

#include "db/store.h"
#include "core/problem_key.h"
#include "families/family.h"
#include "server/jobs/jobs.h"
#include "tuned/v1/worker.pb.h"

namespace tuned::jobs_internal {

/// The compile cache's key of a kernel for the device (server/jobs/compile.cc).
CompileKey KeyOf(const v1::worker::Kernel& k, const v1::Device& device);

/// GFLOPS or GB/s of a run of `ms` milliseconds (Family::Work); 0 if none.
inline double MetricOf(const Family& family, const Shape& shape, double ms) {
  return ms > 0 ? family.Work(shape) / (ms * 1e6) : 0;
}

/// A worker's Prepare of the job's problem: its key (the worker reads the
/// family and variant from it), its shape, the inputs' seed, and a kernel
/// spec's source.
inline v1::worker::Request PrepareRequest(const JobContext& ctx, uint64_t seed) {
  v1::worker::Request request;
  v1::worker::Prepare* prepare = request.mutable_prepare();
  prepare->set_key(FormatKey(ctx.key));
  prepare->mutable_shape()->Assign(ctx.shape.begin(), ctx.shape.end());
  prepare->set_seed(seed);
  if (ctx.spec) *prepare->mutable_spec() = *ctx.spec;
  return request;
}

}  // namespace tuned::jobs_internal
