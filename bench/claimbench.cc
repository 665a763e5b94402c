// claimbench: how many claims per second one database sustains, with N
// fake-measure daemons. Each daemon is a process with its own connection,
// registered like a real one, that claims `--batch` work items at a time
// (Store::ClaimWork, as JobRunner does) and stores a COMPILED measurement for
// each at once (Store::AddMeasurement), renewing its lease every
// `--heartbeat` claims: the database's share of a fleet's work, with no
// GPU. Prints claims/s and items/s, then checks that every item was measured
// exactly once (lost=0 duplicates=0).
//
//   claimbench --db postgresql://... --daemons 16 --items 20000 --batch 8
//   claimbench --postgres --daemons 64 ...   (starts a PostgreSQL server of its own,
//                                             tests/pg_server.h)
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "db/store.h"
#include "tests/pg_server.h"

namespace {

using Clock = std::chrono::steady_clock;

tuned::v1::Device Kind() {
  tuned::v1::Device d;
  d.set_name("claimbench GPU");
  d.set_cc_major(9);
  d.set_nvrtc_version("13.0");
  d.set_sm_count(132);
  return d;
}

/// One fake daemon: claims and measures until nothing is left; exits 0 on
/// success (its counts on stdout: "claims items").
int RunDaemon(const std::string& url, int index, int batch, int heartbeat_every) {
  auto store = tuned::Store::Open(url);
  if (!store.ok()) {
    std::fprintf(stderr, "daemon %d: %s\n", index, store.status().ToString().c_str());
    return 1;
  }
  auto device = (*store)->UpsertDevice(Kind());
  if (!device.ok()) return 1;
  auto me = (*store)->RegisterDaemon(*device, {.host = "claimbench", .gpu = index,
                                               .gpu_uuid = "fake-" + std::to_string(index),
                                               .pid = getpid(), .lease_seconds = 30});
  if (!me.ok()) return 1;
  long claims = 0, items = 0;
  int64_t job = 0;
  for (int idle = 0; idle < 3;) {
    auto claim = (*store)->ClaimWork(*me, *device, job, batch);
    if (!claim.ok()) {
      std::fprintf(stderr, "daemon %d: %s\n", index, claim.status().ToString().c_str());
      return 1;
    }
    if (!claim->has_value()) {
      ++idle;  // the others hold the last items: they are measured or come back
      usleep(100000);
      continue;
    }
    idle = 0;
    job = (*claim)->job_id;
    ++claims;
    for (const auto& item : (*claim)->items) {
      tuned::v1::Measurement m;
      *m.mutable_config() = item.config;
      m.set_status(tuned::v1::MEASUREMENT_COMPILED);
      if (auto s = (*store)->AddMeasurement(job, m, nullptr, *me); !s.ok()) {
        std::fprintf(stderr, "daemon %d: %s\n", index, s.status().ToString().c_str());
        return 1;
      }
      ++items;
    }
    if (claims % heartbeat_every == 0 && !(*store)->Heartbeat(*me, job).ok()) return 1;
  }
  std::printf("%ld %ld\n", claims, items);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"claimbench: claims per second of one database with N fake-measure daemons"};
  std::string url;
  bool own_postgres = false;
  int daemons = 16, items = 20000, batch = 8, heartbeat_every = 10;
  app.add_option("--db", url, "database URL (postgresql://... or a SQLite path)");
  app.add_flag("--postgres", own_postgres, "start a PostgreSQL server of its own (Debian's)");
  app.add_option("--daemons", daemons, "fake daemons (processes)")->check(CLI::PositiveNumber);
  app.add_option("--items", items, "work items of the job")->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "items per claim (a real daemon claims 2 x --compile-batch)")
      ->check(CLI::PositiveNumber);
  app.add_option("--heartbeat", heartbeat_every, "claims between lease renewals")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<tuned::PgServer> server;
  if (own_postgres) {
    auto s = tuned::PgServer::Create();
    if (!s.ok()) {
      std::fprintf(stderr, "claimbench: %s\n", s.status().ToString().c_str());
      return 1;
    }
    server = *std::move(s);
    if (!server->CreateDatabase("claimbench").ok()) return 1;
    url = server->url("claimbench");
  }
  if (url.empty()) {
    std::fprintf(stderr, "claimbench: --db URL or --postgres\n");
    return 2;
  }
  auto store = tuned::Store::Open(url);
  if (!store.ok()) {
    std::fprintf(stderr, "claimbench: %s\n", store.status().ToString().c_str());
    return 1;
  }
  auto device = (*store)->UpsertDevice(Kind());
  tuned::v1::Problem problem;
  problem.set_family(tuned::v1::FAMILY_TRANSPOSE);
  problem.set_dtype(tuned::v1::DTYPE_F32);
  problem.add_shape(items);
  problem.add_shape(1);
  auto job = (*store)->CreateJob(*device, problem, items, 0);
  std::vector<tuned::v1::KernelConfig> configs(items);
  for (int i = 0; i < items; ++i) {
    configs[i].set_name("c" + std::to_string(i));
    (*configs[i].mutable_params())["I"] = i;
  }
  if (!job.ok() || !(*store)->AddRound(*job, 0, configs).ok()) return 1;

  const auto start = Clock::now();
  std::vector<std::pair<pid_t, int>> children;  // pid, read end of its stdout
  for (int i = 0; i < daemons; ++i) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      dup2(fds[1], STDOUT_FILENO);
      const int rc = RunDaemon(url, i, batch, heartbeat_every);
      std::fflush(nullptr);  // _Exit flushes nothing
      std::_Exit(rc);
    }
    close(fds[1]);
    children.emplace_back(pid, fds[0]);
  }
  long claims = 0, claimed = 0;
  int failed = 0;
  for (auto [pid, fd] : children) {
    char buf[64] = {};
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    long c = 0, it = 0;
    if (n <= 0 || std::sscanf(buf, "%ld %ld", &c, &it) != 2 || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      ++failed;
    }
    claims += c;
    claimed += it;
  }
  // The last 3 x 100 ms of polling of the last daemon to stop is no work.
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count() - 0.3;
  auto done = (*store)->GetJob(*job);
  auto rows = (*store)->ListMeasurements(*device, problem, 0);
  if (!done.ok() || !rows.ok()) return 1;
  const long stored = static_cast<long>(rows->size());
  std::printf("backend=%s daemons=%d items=%d batch=%d seconds=%.2f claims=%ld claims_per_s=%.0f "
              "items_per_s=%.0f stored=%ld lost=%ld duplicates=%ld failed_daemons=%d\n",
              std::string((*store)->backend()).c_str(), daemons, items, batch, seconds, claims,
              claims / seconds, claimed / seconds, stored, items - stored, claimed - stored, failed);
  return failed == 0 && stored == items && claimed == items ? 0 : 1;
}
