#include "server/metrics.h"

#include <map>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace tuned {

// The registry, plus the queue-depth gauges refreshed from the store at each scrape.
class Metrics::Collector final : public prometheus::Collectable {
 public:
  Collector()
      : registry_(std::make_shared<prometheus::Registry>()),
        measured_(prometheus::BuildCounter()
                      .Name("tuned_configs_measured_total")
                      .Help("Configs whose result was stored, by measurement status")
                      .Register(*registry_)),
        compile_(prometheus::BuildHistogram()
                     .Name("tuned_compile_seconds")
                     .Help("NVRTC compile time of one config")
                     .Register(*registry_)
                     .Add({}, prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.25, 0.5, 1,
                                                                      2.5, 5, 10, 30})),
        measure_(prometheus::BuildHistogram()
                     .Name("tuned_measure_seconds")
                     .Help("Time to verify and time one config on the GPU")
                     .Register(*registry_)
                     .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.01, 0.05, 0.1,
                                                                      0.25, 0.5, 1, 2.5, 5, 10})),
        depth_(prometheus::BuildGauge()
                   .Name("tuned_queue_depth")
                   .Help("Jobs not finished, by state")
                   .Register(*registry_)),
        queued_(depth_.Add({{"state", "queued"}})),
        running_(depth_.Add({{"state", "running"}})),
        lookups_(prometheus::BuildCounter()
                     .Name("tuned_lookups_total")
                     .Help("GetBest answers by match: exact, nearest (another shape's kernel) or miss")
                     .Register(*registry_)),
        restarts_(prometheus::BuildCounter()
                      .Name("tuned_worker_restarts_total")
                      .Help("Restarts of the GPU worker process")
                      .Register(*registry_)
                      .Add({})),
        claims_(prometheus::BuildCounter()
                    .Name("tuned_claims_total")
                    .Help("Claims of work items by this daemon that got at least one item")
                    .Register(*registry_)
                    .Add({})),
        claimed_(prometheus::BuildCounter()
                     .Name("tuned_claimed_items_total")
                     .Help("Work items claimed by this daemon")
                     .Register(*registry_)
                     .Add({})),
        taken_over_(prometheus::BuildCounter()
                        .Name("tuned_claims_taken_over_total")
                        .Help("Work items this daemon claimed after another daemon's lease ran out")
                        .Register(*registry_)
                        .Add({})),
        twice_(prometheus::BuildCounter()
                   .Name("tuned_measured_twice_total")
                   .Help("Configs this daemon measured that another daemon had stored already")
                   .Register(*registry_)
                   .Add({})),
        renewals_(prometheus::BuildCounter()
                      .Name("tuned_lease_renewals_total")
                      .Help("Heartbeats that renewed this daemon's leases")
                      .Register(*registry_)
                      .Add({})),
        held_(prometheus::BuildGauge()
                  .Name("tuned_claims_held")
                  .Help("Work items this daemon holds under its lease, at its last heartbeat")
                  .Register(*registry_)
                  .Add({})) {
    // Each match's counter is made once: Family::Add locks the family, and
    // GetBest counts every call.
    for (const char* m : {"exact", "nearest", "miss"}) lookup_counters_[m] = &lookups_.Add({{"match", m}});
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::function<int64_t(v1::JobState)> depth;
    {
      std::lock_guard<std::mutex> lock(mu_);
      depth = depth_source_;
    }
    if (depth) {
      queued_.Set(static_cast<double>(depth(v1::JOB_QUEUED)));
      running_.Set(static_cast<double>(depth(v1::JOB_RUNNING)));
    }
    return registry_->Collect();
  }

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& measured_;
  prometheus::Histogram& compile_;
  prometheus::Histogram& measure_;
  prometheus::Family<prometheus::Gauge>& depth_;
  prometheus::Gauge& queued_;
  prometheus::Gauge& running_;
  prometheus::Family<prometheus::Counter>& lookups_;
  std::map<std::string, prometheus::Counter*, std::less<>> lookup_counters_;  // by match; fixed after construction
  prometheus::Counter& restarts_;
  prometheus::Counter& claims_;
  prometheus::Counter& claimed_;
  prometheus::Counter& taken_over_;
  prometheus::Counter& twice_;
  prometheus::Counter& renewals_;
  prometheus::Gauge& held_;
  mutable std::mutex mu_;
  std::function<int64_t(v1::JobState)> depth_source_;
};

Metrics::Metrics() : collector_(std::make_shared<Collector>()) {}
Metrics::~Metrics() = default;

absl::Status Metrics::Listen(const std::string& address) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", address, ": ", e.what()));
  }
  exposer_->RegisterCollectable(collector_);
  return absl::OkStatus();
}

int Metrics::port() const {
  if (!exposer_) return 0;
  const auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void Metrics::SetQueueDepth(std::function<int64_t(v1::JobState)> depth) {
  std::lock_guard<std::mutex> lock(collector_->mu_);
  collector_->depth_source_ = std::move(depth);
}

void Metrics::Measured(const v1::Measurement& m, double compile_ms, absl::Duration measure_time) {
  std::string status = v1::MeasurementStatus_Name(m.status());
  if (status.rfind("MEASUREMENT_", 0) == 0) status = status.substr(12);
  std::transform(status.begin(), status.end(), status.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  collector_->measured_.Add({{"status", status}}).Increment();
  if (compile_ms > 0) collector_->compile_.Observe(compile_ms / 1e3);
  // Configs that only compiled (compile-only mode, compile errors) never ran.
  if (m.status() != v1::MEASUREMENT_COMPILED && m.status() != v1::MEASUREMENT_COMPILE_ERROR) {
    collector_->measure_.Observe(absl::ToDoubleSeconds(measure_time));
  }
}

void Metrics::WorkerRestarted() { collector_->restarts_.Increment(); }

void Metrics::Claimed(int items, int taken_over) {
  collector_->claims_.Increment();
  collector_->claimed_.Increment(items);
  collector_->taken_over_.Increment(taken_over);
}

void Metrics::MeasuredTwice() { collector_->twice_.Increment(); }

void Metrics::Heartbeat(int64_t held) {
  collector_->renewals_.Increment();
  collector_->held_.Set(static_cast<double>(held));
}

void Metrics::Lookup(std::string_view match) {
  auto it = collector_->lookup_counters_.find(match);
  if (it != collector_->lookup_counters_.end()) it->second->Increment();
}

std::string Metrics::Text() const {
  return prometheus::TextSerializer().Serialize(collector_->Collect());
}

}  // namespace tuned
