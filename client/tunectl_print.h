// tunectl's output: tables, JSON, and the one-line forms of jobs, problems,
// measurements and kernel specs that its commands print (client/tunectl.cc).
#pragma once

#include <string>
#include <vector>

#include "google/protobuf/message.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned::tunectl {

// Prints rows as columns padded to the widest cell.
void PrintTable(const std::vector<std::vector<std::string>>& rows);

// A message as JSON on stdout: proto field names, every field, indented.
void PrintJson(const google::protobuf::Message& msg);

// "queued", "done", ...; the number for a state this build does not know.
std::string StateName(v1::JobState s);

// A kernel spec's version as tunectl shows it: the first 12 hex digits of its hash.
std::string ShortHash(const std::string& hash);

// "sgemm f32 1024x1024x1024", with the math mode and the layout after it
// where they are not the defaults: "sgemm f32 1024x1024x1024 tf32 nt"; a kernel spec's problem with
// its version: "matmul_tiled@3f2a9c1d04e7 1024x1024x1024".
std::string ProblemString(const v1::Problem& p);

// What a kernel's error is measured against: "vs cuBLAS" (ieee_fp32), or
// "vs fp64; cuBLAS TF32 2.90e-04" (the baseline's own error against it).
std::string ErrorAgainst(v1::Math math, const std::string& baseline, double baseline_error);

// A time in ms with 4 decimals, "-" for none (0).
std::string Ms(double ms);

// "1980 MHz", "1155 MHz LOW" (under 90% of the maximum, twice), "-" unknown.
std::string Clock(const v1::Measurement& m);

// The judged speedup over the baseline: "1.07x (95% CI 1.05–1.09, 30 pairs)".
std::string Speedup(const v1::BestKernel& b);

// GFLOPS or GB/s with 1 decimal, "-" for none (0).
std::string Metric(double v);

// "GFLOPS" or "GB/s": the unit of the problem's built-in family ("metric"
// for a kernel spec's, whose unit its spec names).
std::string MetricUnit(const v1::Problem& p);

// "node-a gpu 0: 310, node-b gpu 1: 290": the daemons that measured the job.
std::string MeasuredBy(const v1::Job& j);

// "model, budget 10s" / "exhaustive".
std::string SearchString(const v1::Job& j);

// Whether a measurement's output was checked against the reference (OK or
// WRONG_ANSWER): its error means something.
bool Verified(const v1::Measurement& m);

// Why a measurement failed, in one line of at most 200 characters: the first
// line of its message that names an error ("kernel.cu(12): error: ...", from
// NVRTC's log), else the message's first line that is not empty; "" for a
// measurement that did not fail (OK, or compiled in compile-only mode).
std::string WhyFailed(const v1::Measurement& m);

// A job's fields, one per line, as `tunectl job` shows them.
void PrintJob(const v1::Job& j);

// One progress line; on a terminal it redraws in place.
void PrintProgress(const v1::Job& j, bool tty);

// The spec of `f` as rows of a table: each field readable, one line per
// parameter, restriction and argument.
void PrintFamily(const v1::FamilyInfo& f);

}  // namespace tuned::tunectl
