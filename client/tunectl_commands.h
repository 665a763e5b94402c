// tunectl's commands, one function each (client/tunectl.cc parses the
// command line and calls them). Each prints its result (a table, or JSON
// with Context::json) and returns tunectl's exit status: 0 done, 1 the
// daemon refused or failed the request (the message on stderr).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "tuned/client.h"

namespace tuned::tunectl {

/// What every command uses: the daemon's client and the output form.
struct Context {
  Client& client;
  bool json = false;
};

/// Prints "tunectl: <message>" on stderr; returns 1.
int Fail(const absl::Status& s);

/// `tunectl best`: the served kernel of `problem` (or, where no config passed
/// verification, the baseline). Returns 1 where the shape itself is not
/// tuned (a nearby shape's kernel, marked NOT TUNED), so scripts can ask.
int Best(Context& ctx, const v1::Problem& problem, bool tune_if_missing);
/// `tunectl sweep`: queues a sweep of `problem`; with `wait`, follows it and
/// prints the winner as Best does (1 if the job did not end done).
int Sweep(Context& ctx, const v1::Problem& problem, bool wait, const std::string& strategy,
          const std::string& budget);
/// `tunectl results`: the measurements of `problem`, best first (`top`: 0 all).
int Results(Context& ctx, const v1::Problem& problem, int top);
/// `tunectl report`: the SVG picture of `problem`'s sweep, into `out_file`.
int Report(Context& ctx, const v1::Problem& problem, const std::string& out_file);
/// `tunectl export`: the served kernel of `problem` as kernel.{cu,cubin,ptx,json} in `out_dir`.
int Export(Context& ctx, const v1::Problem& problem, const std::string& out_dir);
/// `tunectl dump`: every tuned kernel of the daemon's device, a directory each, under `out_dir`.
int Dump(Context& ctx, const std::string& out_dir);
/// `tunectl import`: the kernels that dump or export wrote under `in_dir`, stored in the daemon.
int Import(Context& ctx, const std::string& in_dir);
/// `tunectl jobs`: at most `limit` jobs, newest first.
int Jobs(Context& ctx, int limit);
/// `tunectl job ID` and `tunectl cancel ID` (`cancel`): one job, after cancelling it.
int ShowJob(Context& ctx, int64_t id, bool cancel);
/// `tunectl watch`: follows a job to its end; 1 unless it ended done.
int Watch(Context& ctx, int64_t id);
/// `tunectl daemons`: the daemons sharing the database (`all`: the gone ones too).
int Daemons(Context& ctx, bool all);
/// `tunectl family add`: registers the kernel spec in `spec_file`.
int FamilyAdd(Context& ctx, const std::string& spec_file);
/// `tunectl family show`: a family's spec (`version`: a kernel spec's hash; empty: the newest).
int FamilyShow(Context& ctx, const std::string& name, const std::string& version);
/// `tunectl families`: the built-in families and the newest version of each kernel spec.
int Families(Context& ctx);
/// `tunectl health`: the gRPC health check of `service` (empty: the daemon); 1 if NOT_SERVING.
int Health(Context& ctx, const std::string& service);
/// `tunectl prior`: the prior the daemon loaded, and where it uses it.
int Prior(Context& ctx);
/// `tunectl workload sweep`: a sweep of each problem of the workload file
/// (client/workload.h PlanSweeps), largest GPU time first; with `wait`,
/// follows them all. 1 if the file is bad, a sweep was refused or (with
/// `wait`) did not end done.
int SweepWorkload(Context& ctx, const std::string& file, bool wait);
/// `tunectl workload report`: each recorded problem's time, what serves it
/// and its speedup over the baseline there, the time it would take, and the
/// whole workload's saving. 1 if the file is bad.
int ReportWorkload(Context& ctx, const std::string& file);
/// `tunectl device`: the daemon's GPU, its driver and NVRTC, and the compile-ahead.
int Device(Context& ctx);

}  // namespace tuned::tunectl
