// Text embedded into the binaries at build time (cmake/embed.cmake).
#pragma once

namespace tuned::embedded {
extern const char kSgemmSource[];      // kernels_src/sgemm/sgemm.cuh
extern const char kTransposeSource[];  // kernels_src/transpose/transpose.cuh
extern const char kFaultTestSource[];  // kernels_src/fault_test/fault_test.cuh
extern const char kSchemaSql[];        // db/schema.sql
extern const char kMigration2Sql[];    // db/migrations/2.sql (schema 1 -> 2)
}  // namespace tuned::embedded
