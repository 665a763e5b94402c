// The store's fleet on both backends (db/store_fleet.cc): daemons, work
// items and claims, leases and rounds, two daemons draining one job.
#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tests/store_test.h"

namespace tuned {
namespace {

/// Work items named "c0", "c1", ... with one parameter.
std::vector<v1::KernelConfig> Items(int n, const std::string& prefix = "c") {
  std::vector<v1::KernelConfig> items(n);
  for (int i = 0; i < n; ++i) {
    items[i].set_name(prefix + std::to_string(i));
    (*items[i].mutable_params())["X"] = i;
  }
  return items;
}

DaemonIdentity Daemon(int gpu, double lease = 30) {
  return {.host = "node-a", .gpu = gpu, .gpu_uuid = "GPU-" + std::to_string(gpu), .pid = 42,
          .lease_seconds = lease};
}

std::vector<std::string> Names(const Claim& c) {
  std::vector<std::string> out;
  for (const auto& item : c.items) out.push_back(item.retime ? "<retime>" : item.config.name());
  return out;
}

TEST_P(StoreTest, ClaimsTakeTheOldestJobsItemsInOrderAndPreferThePreparedJob) {
  const int64_t a = NewJob(Sgemm(128, 128, 128));
  const int64_t b = NewJob(Sgemm(256, 256, 256));
  auto me = store_->RegisterDaemon(dev_, Daemon(0));
  auto other = store_->RegisterDaemon(dev_, Daemon(1));
  ASSERT_TRUE(me.ok() && other.ok());
  // No items yet: nothing to claim; both jobs need their first round.
  EXPECT_FALSE(store_->ClaimWork(*me, dev_, 0, 4)->has_value());
  EXPECT_EQ(store_->IdleJobs(dev_)->size(), 2u);
  ASSERT_TRUE(*store_->AddRound(a, 0, Items(5)));
  ASSERT_TRUE(*store_->AddRound(b, 0, Items(3, "d")));
  EXPECT_EQ(store_->GetJob(a)->total(), 5);
  EXPECT_EQ(store_->GetJob(a)->round(), 1);
  EXPECT_TRUE(store_->IdleJobs(dev_)->empty());

  auto first = store_->ClaimWork(*me, dev_, 0, 2);
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status();
  EXPECT_EQ((*first)->job_id, a);
  EXPECT_EQ(Names(**first), (std::vector<std::string>{"c0", "c1"}));
  EXPECT_EQ((*first)->items[1].config.params().at("X"), 1);
  EXPECT_EQ(store_->GetJob(a)->state(), v1::JOB_RUNNING);
  EXPECT_EQ(store_->GetJob(b)->state(), v1::JOB_QUEUED);
  // Another daemon prepared for b gets b's items; then a's rest, never a claimed one.
  auto second = store_->ClaimWork(*other, dev_, b, 10);
  EXPECT_EQ((*second)->job_id, b);
  EXPECT_EQ(Names(**second), (std::vector<std::string>{"d0", "d1", "d2"}));
  auto third_daemon = store_->RegisterDaemon(dev_, Daemon(2));
  auto third = store_->ClaimWork(*third_daemon, dev_, b, 10);
  EXPECT_EQ((*third)->job_id, a);
  EXPECT_EQ(Names(**third), (std::vector<std::string>{"c2", "c3", "c4"}));
  EXPECT_EQ((*third)->taken_over, 0);
  // A daemon's own unfinished claims come back to it (after a database outage).
  auto again = store_->ClaimWork(*me, dev_, a, 10);
  EXPECT_EQ(Names(**again), (std::vector<std::string>{"c0", "c1"}));
  // Another kind sees none of it.
  auto kind = store_->UpsertDevice(Gpu("12.8"));
  auto stranger = store_->RegisterDaemon(*kind, Daemon(7));
  EXPECT_FALSE(store_->ClaimWork(*stranger, *kind, 0, 10)->has_value());
}

// A daemon without --allow-user-kernels neither advances nor claims the
// jobs of users' kernel specs; built-in families' jobs it does, and a daemon
// that allows user kernels takes the spec's.
TEST_P(StoreTest, ADaemonWithoutUserKernelsLeavesTheJobsOfSpecsAlone) {
  v1::Problem spec_problem;
  spec_problem.set_family_name("softmax_rows");
  spec_problem.set_spec_hash(std::string(64, 'a'));
  spec_problem.add_shape(256);
  spec_problem.add_shape(100);
  const int64_t spec_job = NewJob(spec_problem);
  const int64_t builtin = NewJob(Sgemm(64, 64, 64));
  auto plain = store_->RegisterDaemon(dev_, Daemon(0));
  DaemonIdentity with_flag = Daemon(1);
  with_flag.user_kernels = true;
  with_flag.sandbox = "Landlock ABI 7";
  auto allows = store_->RegisterDaemon(dev_, with_flag);
  ASSERT_TRUE(plain.ok() && allows.ok());
  // `tunectl daemons` shows which daemon runs specs, and what confines it.
  auto listed = store_->ListDaemons();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_FALSE((*listed)[0].user_kernels());
  EXPECT_EQ((*listed)[0].sandbox(), "");
  EXPECT_TRUE((*listed)[1].user_kernels());
  EXPECT_EQ((*listed)[1].sandbox(), "Landlock ABI 7");
  auto idle = store_->IdleJobs(dev_, /*user_kernels=*/false);
  ASSERT_TRUE(idle.ok()) << idle.status();
  ASSERT_EQ(idle->size(), 1u);
  EXPECT_EQ(idle->front().id(), builtin);
  EXPECT_EQ(store_->IdleJobs(dev_, true)->size(), 2u);
  ASSERT_TRUE(*store_->AddRound(spec_job, 0, Items(2)));
  auto none = store_->ClaimWork(*plain, dev_, spec_job, 10, /*user_kernels=*/false);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(*store_->AddRound(builtin, 0, Items(1, "b")));
  auto own = store_->ClaimWork(*plain, dev_, spec_job, 10, false);
  ASSERT_TRUE(own.ok() && own->has_value());
  EXPECT_EQ((*own)->job_id, builtin);
  auto taken = store_->ClaimWork(*allows, dev_, 0, 10, true);
  ASSERT_TRUE(taken.ok() && taken->has_value());
  EXPECT_EQ((*taken)->job_id, spec_job);
  EXPECT_EQ(Names(**taken), (std::vector<std::string>{"c0", "c1"}));
}

TEST_P(StoreTest, AMeasurementFinishesItsItemOnceAndTheRoundMovesOnOnce) {
  const int64_t id = NewJob(Sgemm(64, 64, 64));
  auto me = store_->RegisterDaemon(dev_, Daemon(0));
  auto other = store_->RegisterDaemon(dev_, Daemon(1));
  ASSERT_TRUE(*store_->AddRound(id, 0, Items(2)));
  EXPECT_FALSE(*store_->AddRound(id, 0, Items(2)));  // another daemon did it: nothing changes
  EXPECT_FALSE(*store_->AddRound(id, 1, Items(1, "n")));  // items still open
  auto claim = store_->ClaimWork(*me, dev_, id, 10);
  ASSERT_EQ((*claim)->items.size(), 2u);
  auto m = Meas("c0", v1::MEASUREMENT_OK, 1.0);
  auto first = store_->AddMeasurement(id, m, nullptr, *me, 0.9);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(*first);
  // The same config measured again by another daemon keeps the first row.
  auto again = Meas("c0", v1::MEASUREMENT_OK, 0.5);
  auto twice = store_->AddMeasurement(id, again, nullptr, *other, 0.4);
  ASSERT_TRUE(twice.ok());
  EXPECT_FALSE(*twice);  // measured twice: reported, not stored
  ASSERT_TRUE(store_->AddMeasurement(id, Meas("c1", v1::MEASUREMENT_WRONG_ANSWER, 0), nullptr, *other).ok());
  auto all = store_->ListMeasurements(dev_, Sgemm(64, 64, 64), 0);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_DOUBLE_EQ((*all)[0].median_ms(), 1.0);
  EXPECT_EQ((*all)[0].host(), "node-a");
  EXPECT_EQ((*all)[0].gpu(), 0);
  EXPECT_EQ((*all)[1].gpu(), 1);
  // The best carries the baseline of the GPU that measured it.
  EXPECT_DOUBLE_EQ((*store_->Best(dev_, Sgemm(64, 64, 64)))->baseline_ms, 0.9);
  auto job = store_->GetJob(id);
  ASSERT_EQ(job->daemons_size(), 2);
  EXPECT_EQ(job->daemons(0).measured() + job->daemons(1).measured(), 2);

  // Round 1 is done: a refinement round adds its items (a measured one as
  // finished) and the total follows the items, however often it is asked.
  ASSERT_EQ(store_->IdleJobs(dev_)->size(), 1u);
  std::vector<v1::KernelConfig> next = Items(3, "n");
  next.push_back(Items(1).front());  // c0: measured already
  ASSERT_TRUE(*store_->AddRound(id, 1, next));
  EXPECT_FALSE(*store_->AddRound(id, 1, next));
  EXPECT_EQ(store_->GetJob(id)->total(), 5);
  EXPECT_EQ(store_->GetJob(id)->round(), 2);
  auto refine = store_->ClaimWork(*me, dev_, id, 10);
  EXPECT_EQ(Names(**refine), (std::vector<std::string>{"n0", "n1", "n2"}));
  for (const auto& item : (*refine)->items) {
    ASSERT_TRUE(store_->AddMeasurement(id, Meas(item.config.name(), v1::MEASUREMENT_OK, 2.0), nullptr, *me).ok());
  }
  // Then the re-timing item, which is no config: the total stays.
  ASSERT_TRUE(*store_->AddRound(id, 2, {}, /*retime=*/true));
  EXPECT_EQ(store_->GetJob(id)->total(), 5);
  auto retime = store_->ClaimWork(*other, dev_, 0, 10);
  EXPECT_EQ(Names(**retime), (std::vector<std::string>{"<retime>"}));
  EXPECT_TRUE(store_->IdleJobs(dev_)->empty());
  ASSERT_TRUE(*store_->FinishJob(id, v1::JOB_DONE));
  EXPECT_FALSE(*store_->FinishJob(id, v1::JOB_CANCELLED));  // ended already: stays DONE
  EXPECT_EQ(store_->GetJob(id)->state(), v1::JOB_DONE);
  EXPECT_TRUE(store_->IdleJobs(dev_)->empty());
  EXPECT_EQ(store_->FinishJob(id, v1::JOB_RUNNING).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreTest, ExpiredLeasesAndReleasedClaimsGoBackToThePool) {
  const int64_t id = NewJob(Sgemm(64, 64, 64));
  auto dead = store_->RegisterDaemon(dev_, Daemon(0, /*lease=*/0.3));
  auto live = store_->RegisterDaemon(dev_, Daemon(1, /*lease=*/30));
  ASSERT_TRUE(*store_->AddRound(id, 0, Items(4)));
  ASSERT_EQ((*store_->ClaimWork(*dead, dev_, id, 2))->items.size(), 2u);
  ASSERT_EQ((*store_->ClaimWork(*live, dev_, id, 1))->items.size(), 1u);
  auto beat = store_->Heartbeat(*live, id);
  ASSERT_TRUE(beat.ok()) << beat.status();
  EXPECT_EQ(beat->held, 1);
  EXPECT_TRUE(beat->job_active);
  // Before the lease ends only c3 is free; after it, the dead daemon's two.
  EXPECT_EQ(Names(**store_->ClaimWork(*live, dev_, id, 10)), (std::vector<std::string>{"c2", "c3"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto taken = store_->ClaimWork(*live, dev_, id, 10);
  EXPECT_EQ(Names(**taken), (std::vector<std::string>{"c0", "c1", "c2", "c3"}));
  EXPECT_EQ((*taken)->taken_over, 2);
  auto daemons = store_->ListDaemons();
  ASSERT_EQ(daemons->size(), 1u);  // the silent one is not live
  EXPECT_EQ((*daemons)[0].gpu(), 1);
  EXPECT_EQ((*daemons)[0].claimed(), 4);
  EXPECT_EQ((*daemons)[0].job_id(), id);
  EXPECT_EQ((*daemons)[0].kind().sm_count(), 132);
  EXPECT_EQ(store_->ListDaemons(/*all=*/true)->size(), 2u);
  // A stopping daemon hands its claims back at once and leaves the list.
  ASSERT_TRUE(store_->ReleaseClaims(*live, /*stopped=*/true).ok());
  EXPECT_TRUE(store_->ListDaemons()->empty());
  EXPECT_EQ((*store_->ClaimWork(*dead, dev_, id, 10))->items.size(), 4u);
  // Its restart finds its own row and hands back what its earlier run held.
  auto restarted = store_->RegisterDaemon(dev_, Daemon(0, 0.3));
  EXPECT_EQ(*restarted, *dead);
  EXPECT_EQ((*store_->ClaimWork(*live, dev_, id, 10))->items.size(), 4u);
  // A cancelled job: the heartbeat says so.
  ASSERT_TRUE(*store_->FinishJob(id, v1::JOB_CANCELLED, "cancelled"));
  EXPECT_FALSE(store_->Heartbeat(*live, id)->job_active);
  EXPECT_FALSE(store_->ClaimWork(*live, dev_, id, 10)->has_value());
  EXPECT_TRUE(absl::IsNotFound(store_->Heartbeat(999, 0).status()));
}

// Two daemons, each with its own Store (connection) to one database, drain
// one job at once: every item is claimed by one of them, measured once.
TEST_P(StoreTest, TwoDaemonsDrainOneJobClaimingEachItemOnce) {
  TempDir dir;
  const std::string url = GetParam() == "sqlite" ? (dir.path() / "fleet.db").string() : url_;
  constexpr int kItems = 60;
  std::unique_ptr<Store> stores[2];
  for (auto& store : stores) {
    auto s = Store::Open(url);
    ASSERT_TRUE(s.ok()) << s.status();
    store = *std::move(s);
  }
  const int64_t dev = *stores[0]->UpsertDevice(Gpu());
  const int64_t job = *stores[0]->CreateJob(dev, Sgemm(64, 64, 64), kItems, 0);
  ASSERT_TRUE(*stores[0]->AddRound(job, 0, Items(kItems)));
  absl::Mutex mu;
  std::map<std::string, int> claimed;  // config -> times claimed
  int measured[2] = {0, 0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int d = 0; d < 2; ++d) {
    threads.emplace_back([&, d] {
      Store& store = *stores[d];
      auto me = store.RegisterDaemon(dev, Daemon(d));
      for (++ready; ready < 2;) std::this_thread::yield();  // start together
      ASSERT_TRUE(me.ok()) << me.status();
      for (;;) {
        auto claim = store.ClaimWork(*me, dev, job, 3);
        ASSERT_TRUE(claim.ok()) << claim.status();
        if (!claim->has_value()) return;
        for (const auto& item : (*claim)->items) {
          {
            absl::MutexLock lock(&mu);
            ++claimed[item.config.name()];
            ++measured[d];
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(2));  // measuring
          auto m = Meas(item.config.name(), v1::MEASUREMENT_OK, 1.0);
          ASSERT_TRUE(store.AddMeasurement(job, m, nullptr, *me).ok());
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(claimed.size(), static_cast<size_t>(kItems));
  for (const auto& [name, n] : claimed) EXPECT_EQ(n, 1) << name << " claimed " << n << " times";
  EXPECT_GT(measured[0], 0);
  EXPECT_GT(measured[1], 0);
  EXPECT_EQ(stores[1]->GetJob(job)->done(), kItems);
  EXPECT_EQ(stores[1]->ListMeasurements(dev, Sgemm(64, 64, 64), 0)->size(),
            static_cast<size_t>(kItems));
}

}  // namespace
}  // namespace tuned
