// Text embedded into the binaries at build time (cmake/embed.cmake).
#pragma once

namespace tuned::embedded {
// The kernel files (library tuned_kernel_text; server/families/kernel_text.cc
// names each by its path, and a config's KernelSource lists them in order).
extern const char kSgemmSource[];              // kernels_src/sgemm/sgemm.cuh
extern const char kSgemmWarpSource[];          // kernels_src/sgemm/warp.cuh
extern const char kGemvSource[];               // kernels_src/sgemm/gemv.cuh
extern const char kSgemmMmaSource[];           // kernels_src/sgemm/mma_tf32.cuh
extern const char kSgemmWgmmaSource[];         // kernels_src/sgemm/wgmma_tf32.cuh
extern const char kSgemmWgmmaTileSource[];     // kernels_src/sgemm/wgmma_tile.cuh
extern const char kSgemmWgmmaRsSource[];       // kernels_src/sgemm/wgmma_rs.cuh
extern const char kSgemmWgmmaKernelsSource[];  // kernels_src/sgemm/wgmma_kernels.cuh
extern const char kTransposeSource[];  // kernels_src/transpose/transpose.cuh
extern const char kFaultTestSource[];  // kernels_src/fault_test/fault_test.cuh
// The schemas and migrations (library tuned_store).
extern const char kSqliteSchemaSql[];      // db/sqlite/schema.sql
extern const char kSqliteMigration2Sql[];  // db/sqlite/migrations/2.sql (schema 1 -> 2)
extern const char kSqliteMigration3Sql[];  // db/sqlite/migrations/3.sql (schema 2 -> 3)
extern const char kSqliteMigration4Sql[];  // db/sqlite/migrations/4.sql (schema 3 -> 4)
extern const char kSqliteMigration5Sql[];  // db/sqlite/migrations/5.sql (schema 4 -> 5)
extern const char kPostgresMigration4Sql[];  // db/postgres/migrations/4.sql (schema 3 -> 4)
extern const char kPostgresMigration5Sql[];  // db/postgres/migrations/5.sql (schema 4 -> 5)
extern const char kPostgresSchemaSql[];    // db/postgres/schema.sql
}  // namespace tuned::embedded
