// The schemas and migrations, embedded at build time (cmake/embed.cmake;
// CMakeLists.txt: tuned_embed into tuned_store).
#pragma once

namespace tuned::embedded {
extern const char kSqliteSchemaSql[];        // db/sqlite/schema.sql
extern const char kSqliteMigration2Sql[];    // db/sqlite/migrations/2.sql (schema 1 -> 2)
extern const char kSqliteMigration3Sql[];    // db/sqlite/migrations/3.sql (schema 2 -> 3)
extern const char kSqliteMigration4Sql[];    // db/sqlite/migrations/4.sql (schema 3 -> 4)
extern const char kSqliteMigration5Sql[];    // db/sqlite/migrations/5.sql (schema 4 -> 5)
extern const char kSqliteMigration6Sql[];    // db/sqlite/migrations/6.sql (schema 5 -> 6)
extern const char kSqliteMigration7Sql[];    // db/sqlite/migrations/7.sql (schema 6 -> 7)
extern const char kSqliteMigration8Sql[];    // db/sqlite/migrations/8.sql (schema 7 -> 8)
extern const char kSqliteMigration9Sql[];    // db/sqlite/migrations/9.sql (schema 8 -> 9)
extern const char kSqliteMigration10Sql[];   // db/sqlite/migrations/10.sql (schema 9 -> 10)
extern const char kSqliteMigration11Sql[];   // db/sqlite/migrations/11.sql (schema 10 -> 11)
extern const char kPostgresSchemaSql[];      // db/postgres/schema.sql
extern const char kPostgresMigration4Sql[];  // db/postgres/migrations/4.sql (schema 3 -> 4)
extern const char kPostgresMigration5Sql[];  // db/postgres/migrations/5.sql (schema 4 -> 5)
extern const char kPostgresMigration6Sql[];  // db/postgres/migrations/6.sql (schema 5 -> 6)
extern const char kPostgresMigration7Sql[];  // db/postgres/migrations/7.sql (schema 6 -> 7)
extern const char kPostgresMigration8Sql[];  // db/postgres/migrations/8.sql (schema 7 -> 8)
extern const char kPostgresMigration9Sql[];  // db/postgres/migrations/9.sql (schema 8 -> 9)
extern const char kPostgresMigration10Sql[]; // db/postgres/migrations/10.sql (schema 9 -> 10)
extern const char kPostgresMigration11Sql[]; // db/postgres/migrations/11.sql (schema 10 -> 11)
}  // namespace tuned::embedded
