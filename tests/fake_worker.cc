// A stand-in for tuned-worker (test-only): `tuned --worker fake_worker`
// gets a daemon that believes it owns a GPU (an sm_90 device, not
// compile-only), on a machine without one. It speaks the worker pipe
// protocol (proto/tuned/v1/worker.proto, server/common/ipc.h):
//   hello    a device "Fake H100 (tests/fake_worker)", sm_90, not compile-only
//   compile  every kernel COMPILED, with a stand-in cubin (no NVRTC), in one
//            answer also when asked to stream (the daemon takes either)
//   prepare  the family's baseline (cuBLAS in the problem's math mode,
//            cudaMemcpy; a kernel spec's, transpose's too: its last spec_kernels,
//            named as the daemon sent it) timed at $TUNED_WORKER_FAKE_BASELINE_MS
//            (default 0.004; 0: none timed), with an error bound outside
//            MATH_IEEE_FP32. A kernel spec's Prepare is refused unless it
//            carries its kernels with binaries that this program's compile
//            answered (the daemon's compiler's): as the real worker, it
//            compiles no spec code
//   measure  every kernel MEASUREMENT_WRONG_ANSWER: none passes verification
//   retime   refused (there is never a verified kernel to judge)
// Its flags (--gpu, --compile-only, --arch, ...) are accepted and ignored.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "families/family.h"
#include "server/common/ipc.h"
#include "tuned/v1/worker.pb.h"

namespace {

using tuned::v1::worker::Request;
using tuned::v1::worker::Response;

std::string BaselineName(const tuned::v1::Problem& p) {
  switch (p.family()) {
    case tuned::v1::FAMILY_SGEMM:
      switch (p.math()) {
        case tuned::v1::MATH_FP32_ACCURATE: return "cuBLAS fp32";
        case tuned::v1::MATH_TF32: return "cuBLAS TF32";
        default: return "cuBLAS";
      }
    default: return "cudaMemcpy";
  }
}

/// The stand-in binary that a compile answers for the kernel named `name`.
std::string FakeCubin(const std::string& name) { return "\x7f" "ELF fake cubin of " + name; }

Response Handle(const Request& request) {
  Response response;
  switch (request.kind_case()) {
    case Request::kHello: {
      tuned::v1::Device d = tuned::Sm90ReferenceDevice();
      d.set_name("Fake H100 (tests/fake_worker)");
      d.set_nvrtc_version("fake");
      d.set_uuid("GPU-fake");
      d.set_compile_only(false);
      *response.mutable_device() = d;
      break;
    }
    case Request::kCompile:
      for (const auto& k : request.compile().kernels()) {
        auto* r = response.mutable_compiled()->add_results();
        r->set_status(tuned::v1::MEASUREMENT_COMPILED);
        r->set_cubin(FakeCubin(k.name()));
        r->set_ptx("// fake ptx");
        r->set_entry("_Z4fakev");
        r->set_registers(32);
      }
      break;
    case Request::kPrepare: {
      const tuned::v1::Problem p = tuned::PreparedProblem(request.prepare()).value_or(tuned::v1::Problem());
      const char* env = std::getenv("TUNED_WORKER_FAKE_BASELINE_MS");
      const double ms = env != nullptr ? std::atof(env) : 0.004;
      const auto& prepare = request.prepare();
      if (prepare.has_spec()) {
        bool compiled = prepare.spec_kernels_size() > 0 &&
                        prepare.spec_kernels_size() == prepare.spec_compiled_size();
        for (int i = 0; compiled && i < prepare.spec_kernels_size(); ++i) {
          compiled = prepare.spec_compiled(i).cubin().starts_with(FakeCubin(""));
        }
        if (!compiled) {
          response.set_error("fake worker: a kernel spec's Prepare without its kernels compiled by the compiler");
          break;
        }
      }
      auto* r = response.mutable_prepared();
      r->set_baseline_name(prepare.has_spec()
                               ? prepare.spec_kernels(prepare.spec_kernels_size() - 1).name()
                               : BaselineName(p));
      r->set_baseline_ms(ms);
      if (p.family() == tuned::v1::FAMILY_SGEMM && p.math() != tuned::v1::MATH_IEEE_FP32) {
        r->set_baseline_error(2.5e-7);
        r->set_tolerance(5e-7);
      }
      break;
    }
    case Request::kMeasure: {
      auto* r = response.mutable_measured();
      r->set_status(tuned::v1::MEASUREMENT_WRONG_ANSWER);
      r->set_error(1e-3);
      r->set_message("fake worker: error 1e-3 exceeds the bound");
      r->set_registers(32);
      break;
    }
    default:
      response.set_error("fake worker: no verified kernel to re-time");
  }
  return response;
}

}  // namespace

int main() {
  while (true) {
    Request request;
    if (auto s = tuned::ReadMessage(STDIN_FILENO, &request); !s.ok()) return 0;  // the daemon left
    if (auto s = tuned::WriteMessage(STDOUT_FILENO, Handle(request)); !s.ok()) {
      std::fprintf(stderr, "fake_worker: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
}
