// Prometheus metrics of the daemon (prometheus-cpp), served over HTTP at
// http://HOST:PORT/metrics when --metrics-listen is given:
//   tuned_configs_measured_total{status}  counter: configs stored, by status
//                                         ("ok", "compiled", "compile_error", "wrong_answer", ...)
//   tuned_compile_seconds                 histogram: NVRTC time of one config (worker's compile_ms)
//   tuned_measure_seconds                 histogram: time to verify and time one config on the
//                                         GPU, from the daemon's side (configs that ran only)
//   tuned_queue_depth{state}              gauge: jobs "queued" and "running", read at each scrape
//   tuned_lookups_total{match}            counter: GetBest answers, "exact", "nearest" or "miss"
//   tuned_worker_restarts_total           counter: GPU worker restarts
//   tuned_claims_total                    counter: claims of work items that got some (fleet)
//   tuned_claimed_items_total             counter: work items claimed
//   tuned_claims_taken_over_total         counter: items claimed after another daemon's lease
//                                         ran out (that daemon died or was cut off)
//   tuned_measured_twice_total            counter: configs this daemon measured that another had
//                                         stored already (after a lease ran out)
//   tuned_lease_renewals_total            counter: heartbeats that renewed the leases
//   tuned_claims_held                     gauge: items held at the last heartbeat
// Thread-safe; the hooks are cheap and never fail.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tuned/v1/tuner.pb.h"

namespace prometheus {
class Exposer;
}

namespace tuned {

class Metrics {
 public:
  Metrics();
  ~Metrics();

  /// Serves GET /metrics on `address` ("HOST:PORT"; port 0 picks a free one).
  /// UNAVAILABLE if it cannot listen there.
  absl::Status Listen(const std::string& address);
  /// The port Listen bound, 0 before.
  int port() const;
  /// `depth(state)`: number of jobs in a state, called at each scrape for
  /// tuned_queue_depth (JOB_QUEUED, JOB_RUNNING).
  void SetQueueDepth(std::function<int64_t(v1::JobState)> depth);

  /// Hook: a config's result was stored. `compile_ms` is the worker's NVRTC
  /// time (0: not compiled); `measure_time` the daemon's wait for the GPU.
  void Measured(const v1::Measurement& m, double compile_ms, absl::Duration measure_time);
  /// Hook: the GPU worker was restarted.
  void WorkerRestarted();
  /// Hook: this daemon claimed `items` work items, `taken_over` of them
  /// from an expired lease.
  void Claimed(int items, int taken_over);
  /// Hook: a config this daemon measured was stored already by another.
  void MeasuredTwice();
  /// Hook: a heartbeat renewed the leases of the `held` items held.
  void Heartbeat(int64_t held);
  /// Hook: GetBest answered with `match` ("exact", "nearest" or "miss").
  void Lookup(std::string_view match);

  /// The exposition text, as served (for logs and tests).
  std::string Text() const;

 private:
  class Collector;
  std::shared_ptr<Collector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace tuned
