// Text embedded into the binaries at build time (cmake/embed.cmake).
#pragma once

namespace tuned::embedded {
extern const char kSgemmSource[];      // kernels_src/sgemm/sgemm.cuh
extern const char kGemvSource[];       // kernels_src/sgemm/gemv.cuh (appended to kSgemmSource)
extern const char kSgemmMmaSource[];   // kernels_src/sgemm/mma_tf32.cuh
extern const char kSgemmWgmmaSource[];  // kernels_src/sgemm/wgmma_tf32.cuh (after kSgemmMmaSource)
extern const char kTransposeSource[];  // kernels_src/transpose/transpose.cuh
extern const char kFaultTestSource[];  // kernels_src/fault_test/fault_test.cuh
extern const char kSqliteSchemaSql[];      // db/sqlite/schema.sql
extern const char kSqliteMigration2Sql[];  // db/sqlite/migrations/2.sql (schema 1 -> 2)
extern const char kSqliteMigration3Sql[];  // db/sqlite/migrations/3.sql (schema 2 -> 3)
extern const char kSqliteMigration4Sql[];  // db/sqlite/migrations/4.sql (schema 3 -> 4)
extern const char kSqliteMigration5Sql[];  // db/sqlite/migrations/5.sql (schema 4 -> 5)
extern const char kPostgresMigration4Sql[];  // db/postgres/migrations/4.sql (schema 3 -> 4)
extern const char kPostgresMigration5Sql[];  // db/postgres/migrations/5.sql (schema 4 -> 5)
extern const char kPostgresSchemaSql[];    // db/postgres/schema.sql
}  // namespace tuned::embedded
