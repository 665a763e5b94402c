// Schema 10's database (tests/data/schema_v10_*.sql, the schema before the
// problems table), for the tests that make an older database: a database
// opened by this build is at its newest schema already, and Database::Open
// would migrate an older one.
#pragma once

#include <libpq-fe.h>
#include <sqlite3.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"

#if !defined(TUNED_SCHEMA_V10_SQLITE) || !defined(TUNED_SCHEMA_V10_POSTGRES)
#error "TUNED_SCHEMA_V10_SQLITE and TUNED_SCHEMA_V10_POSTGRES (tests/data/schema_v10_*.sql) must be defined"
#endif

namespace tuned {

/// Makes the unopened database at `url` one of schema 10 as released
/// (tests/data/schema_v10_*.sql), then runs `sql` on it (rows as schema 10
/// stored them, or the steps to an older schema) through a connection of
/// the backend's own library: Database::Open would migrate it.
inline absl::Status MakeSchemaTen(const std::string& backend, const std::string& url,
                                  const std::string& sql) {
  std::ifstream in(backend == "sqlite" ? TUNED_SCHEMA_V10_SQLITE : TUNED_SCHEMA_V10_POSTGRES);
  std::stringstream text;
  text << in.rdbuf() << "\n" << sql;
  if (backend == "postgresql") {
    PGconn* conn = PQconnectdb(url.c_str());
    PGresult* res = PQexec(conn, text.str().c_str());
    absl::Status s = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK
                         ? absl::OkStatus()
                         : absl::InternalError(PQerrorMessage(conn));
    PQclear(res);
    PQfinish(conn);
    return s;
  }
  sqlite3* db = nullptr;
  absl::Status s;
  if (sqlite3_open(url.c_str(), &db) != SQLITE_OK ||
      sqlite3_exec(db, text.str().c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    s = absl::InternalError(sqlite3_errmsg(db));
  }
  sqlite3_close(db);
  return s;
}

}  // namespace tuned
