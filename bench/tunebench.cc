// tunebench: tunes every shape of a shapes file through a running daemon (or
// reads the tuned result it already has) and prints, per shape, the winner
// against the baseline timed in the same job on the same GPU: cuBLAS for
// sgemm, the copy kernel for transpose. The last line is
//   SUMMARY geomean_vs_<baseline>=<x.xx> min_vs_<baseline>=<x.xx> shapes=<n>
// Usage: tunebench --family sgemm --shapes ../shared/bench/shapes.txt [--server ADDR] [--retune]
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/families/family.h"
#include "tuned/client.h"

int main(int argc, char** argv) {
  CLI::App app{"tunebench: tuned kernels vs the baseline, one row per shape"};
  std::string family_name = "sgemm", shapes_path, server;
  bool retune = false;
  app.add_option("--family", family_name, "sgemm or transpose");
  app.add_option("--shapes", shapes_path, "file of shapes, one per line, # comments")->required();
  app.add_option("--server", server, "daemon address (default: the local daemon)");
  app.add_flag("--retune", retune, "sweep every shape even if already tuned");
  CLI11_PARSE(app, argc, argv);
  const tuned::Family* family = tuned::FindFamily(family_name);
  if (family == nullptr) {
    std::cerr << "unknown family " << family_name << "\n";
    return 2;
  }
  std::ifstream in(shapes_path);
  if (!in) {
    std::cerr << "cannot read " << shapes_path << "\n";
    return 2;
  }
  tuned::Client client(server.empty() ? tuned::DefaultServerAddress() : server);

  const std::string unit(family->metric_unit());
  const std::string base = family->id() == tuned::v1::FAMILY_SGEMM ? "cublas" : "copy";
  std::cout << absl::StrFormat("%-18s %-44s %12s %12s %7s %9s %8s\n", "shape", "config",
                               "tuned " + unit, base + " " + unit, "ratio", "error", "tune s");
  double log_sum = 0, min_ratio = 1e30;
  int n = 0, failed = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    tuned::v1::Problem problem;
    problem.set_family(family->id());
    problem.set_dtype(tuned::v1::DTYPE_F32);
    for (int64_t d; fields >> d;) problem.add_shape(d);
    const std::string shape = absl::StrJoin(problem.shape(), "x");
    const auto t0 = std::chrono::steady_clock::now();
    auto best = client.GetBest(problem);
    if (retune || !best.ok() || best->match() != tuned::v1::MATCH_EXACT) {
      auto job = client.SubmitSweep(problem);
      if (job.ok()) job = client.WatchJob(job->id(), [](const tuned::v1::Job&) {});
      if (!job.ok() || job->state() != tuned::v1::JOB_DONE) {
        std::cout << absl::StrFormat("%-18s sweep failed: %s\n", shape,
                                     job.ok() ? job->error() : std::string(job.status().message()));
        ++failed;
        continue;
      }
      best = client.GetBest(problem);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!best.ok()) {
      std::cout << absl::StrFormat("%-18s %s\n", shape, std::string(best.status().message()));
      ++failed;
      continue;
    }
    const auto& m = best->measurement();
    const double ratio = best->baseline_ms() / m.median_ms();
    log_sum += std::log(ratio);
    min_ratio = std::min(min_ratio, ratio);
    ++n;
    std::cout << absl::StrFormat("%-18s %-44s %12.1f %12.1f %6.2fx %9.1e %8.1f\n", shape,
                                 m.config().name(), m.metric(), best->baseline_metric(), ratio,
                                 m.error(), seconds)
              << std::flush;
  }
  std::cout << absl::StrFormat("SUMMARY geomean_vs_%s=%.2f min_vs_%s=%.2f shapes=%d\n", base,
                               n > 0 ? std::exp(log_sum / n) : 0.0, base, n > 0 ? min_ratio : 0.0,
                               n);
  return failed == 0 ? 0 : 1;
}
