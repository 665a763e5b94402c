// The store's jobs on both backends (db/store_jobs.cc): lifecycle and
// timestamps, listing, time totals, client quotas.
#include <string>
#include <vector>

#include "tests/store_test.h"

namespace tuned {
namespace {

TEST_P(StoreTest, JobLifecycleAndTimestamps) {
  const int64_t before = Now();
  int64_t id = NewJob(Sgemm(1024, 512, 256), 120, 30);
  auto job = store_->GetJob(id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->id(), id);
  EXPECT_EQ(job->state(), v1::JOB_QUEUED);
  EXPECT_EQ(job->problem().family(), v1::FAMILY_SGEMM);
  EXPECT_EQ(job->problem().dtype(), v1::DTYPE_F32);
  ASSERT_EQ(job->problem().shape_size(), 3);
  EXPECT_EQ(job->problem().shape(0), 1024);
  EXPECT_EQ(job->problem().shape(1), 512);
  EXPECT_EQ(job->problem().shape(2), 256);
  EXPECT_EQ(job->total(), 120);
  EXPECT_EQ(job->pruned(), 30);
  EXPECT_EQ(job->done(), 0);
  EXPECT_EQ(job->failed(), 0);
  EXPECT_FALSE(job->has_best());
  EXPECT_GE(job->created_unix(), before);
  EXPECT_LE(job->created_unix(), Now());
  EXPECT_EQ(job->started_unix(), 0);
  EXPECT_EQ(job->finished_unix(), 0);

  // A job runs from its first claim on.
  auto daemon = store_->RegisterDaemon(dev_, {.host = "h", .gpu = 0, .gpu_uuid = "GPU-0"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  v1::KernelConfig item;
  item.set_name("c0");
  ASSERT_TRUE(*store_->AddRound(id, 0, {item}));
  ASSERT_TRUE(store_->ClaimWork(*daemon, dev_, 0, 1)->has_value());
  job = store_->GetJob(id);
  EXPECT_EQ(job->state(), v1::JOB_RUNNING);
  EXPECT_GE(job->started_unix(), before);
  EXPECT_EQ(job->finished_unix(), 0);

  ASSERT_TRUE(store_->SetJobBaseline(id, 0.25, 1234.5, "cublasSgemm").ok());
  ASSERT_TRUE(*store_->FinishJob(id, v1::JOB_FAILED, "worker crashed twice"));
  job = store_->GetJob(id);
  EXPECT_EQ(job->state(), v1::JOB_FAILED);
  EXPECT_EQ(job->error(), "worker crashed twice");
  EXPECT_GE(job->finished_unix(), job->started_unix());
  EXPECT_LE(job->finished_unix(), Now());
  EXPECT_DOUBLE_EQ(job->baseline_ms(), 0.25);
  EXPECT_DOUBLE_EQ(job->baseline_metric(), 1234.5);
  EXPECT_EQ(job->baseline_name(), "cublasSgemm");

  auto missing = store_->GetJob(42);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "job 42 not found");
  EXPECT_FALSE(*store_->FinishJob(42, v1::JOB_DONE));  // no such job: nothing changes
  EXPECT_EQ(store_->SetJobBaseline(42, 1, 1, "x").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->FinishJob(id, v1::JOB_STATE_UNSPECIFIED).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreTest, ListJobsNewestFirstWithLimit) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(NewJob(Sgemm(64 * (i + 1), 64, 64)));
  auto all = store_->ListJobs(0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ((*all)[i].id(), ids[4 - i]);
  auto two = store_->ListJobs(2);
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].id(), ids[4]);
  EXPECT_EQ((*two)[0].problem().shape(0), 320);
  EXPECT_EQ((*two)[1].id(), ids[3]);
}

TEST_P(StoreTest, JobTimeAccumulates) {
  const int64_t id = NewJob(Sgemm(64, 64, 64));
  ASSERT_TRUE(store_->AddJobTime(id, {1.0, 2.0, 0.25, 1, 3}).ok());
  ASSERT_TRUE(store_->AddJobTime(id, {0.5, 1.0, 0.25, 2, 4}).ok());
  auto job = store_->GetJob(id);
  ASSERT_TRUE(job.ok());
  EXPECT_DOUBLE_EQ(job->compile_seconds(), 1.5);
  EXPECT_DOUBLE_EQ(job->measure_seconds(), 3.0);
  EXPECT_DOUBLE_EQ(job->wait_seconds(), 0.5);
  EXPECT_EQ(job->worker_restarts(), 3);
  EXPECT_EQ(job->cached(), 7);
}

// Quotas count a client's queued and running jobs and their configs not yet
// measured; finished jobs and other clients do not count.
TEST_P(StoreTest, CreateJobEnforcesTheClientsQuota) {
  const ClientQuota a{"alice", 2, 15};
  auto first = store_->CreateJob(dev_, Sgemm(64, 64, 64), 10, 0, a);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(store_->GetJob(*first)->client(), "alice");
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(store_->AddMeasurement(*first, Meas("c" + std::to_string(i), v1::MEASUREMENT_OK, 1), nullptr).ok());
  }
  // 6 left + 10 > 15; 6 + 9 fits.
  auto over = store_->CreateJob(dev_, Sgemm(128, 64, 64), 10, 0, a);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("'alice' has 6 configs queued; this job adds 10 and the limit is 15"),
            std::string::npos)
      << over.status();
  auto second = store_->CreateJob(dev_, Sgemm(128, 64, 64), 9, 0, a);
  ASSERT_TRUE(second.ok()) << second.status();
  auto third = store_->CreateJob(dev_, Sgemm(256, 64, 64), 1, 0, a);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("has 2 queued or running jobs; the limit is 2"), std::string::npos);
  EXPECT_TRUE(store_->CreateJob(dev_, Sgemm(256, 64, 64), 10, 0, {"bob", 2, 15}).ok());
  ASSERT_TRUE(*store_->FinishJob(*first, v1::JOB_DONE));
  EXPECT_TRUE(store_->CreateJob(dev_, Sgemm(256, 64, 64), 1, 0, a).ok());
  EXPECT_EQ(*store_->CountJobs(dev_, v1::JOB_QUEUED), 3);
  EXPECT_EQ(*store_->CountJobs(dev_, v1::JOB_DONE), 1);
}

}  // namespace
}  // namespace tuned
