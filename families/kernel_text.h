// The text of the kernel files (kernels_src/<family>/, embedded at build time by
// cmake/family.cmake) and the NVRTC source of a config. Library
// tuned_kernel_text: linked by the side that compiles kernels (daemon,
// worker, tests), not by the client library, which takes the families'
// names and geometry only (tuned_families embeds no kernel).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "families/family.h"

namespace tuned {

/// The text of the embedded kernel file `part`, "<family>/<file>" for
/// kernels_src/<family>/<file> (e.g. "gemm/sgemm.cuh"). NOT_FOUND where
/// no kernel file has that name.
absl::StatusOr<std::string_view> KernelFileText(std::string_view part);

/// The NVRTC source of a config: `source.text` where it has no parts, else
/// the text of `source.parts` in order,
/// joined by "\n" (what NVRTC compiles, and what the compile cache's digest
/// is taken of). A part that names no kernel file becomes an `#error` line
/// naming it, so that NVRTC rejects the source with the cause.
std::string SourceText(const KernelSource& source);

/// The kernel spec `family` is made of, with its source text (a built-in
/// spec family's kernel files joined): what the worker prepares a problem
/// from, and what GetFamily shows. nullopt for a family written as code
/// (sgemm).
std::optional<v1::KernelSpec> SpecWithSource(const Family& family);

}  // namespace tuned
