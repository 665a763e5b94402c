// Text embedded into the binaries at build time (cmake/embed.cmake).
#pragma once

namespace tuned::embedded {
extern const char kSgemmSource[];      // kernels_src/sgemm/sgemm.cuh
extern const char kTransposeSource[];  // kernels_src/transpose/transpose.cuh
extern const char kSchemaSql[];        // db/schema.sql
}  // namespace tuned::embedded
