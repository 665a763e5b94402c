// A real PostgreSQL server for tests, from Debian's postgresql package
// (/usr/lib/postgresql/<version>/bin): initdb in a temporary directory,
// pg_ctl start on a Unix socket there (and on 127.0.0.1 when asked), fsync
// off (synchronous_commit stays on: Stop() is a crash, and a test that
// restarts the server must not lose commits); stopped (immediate) and
// removed by the destructor, or by a watchdog process when the test process
// dies without it (a crash). PostgreSQL refuses
// to run as root: as root (CI), the directory is given to `nobody` and the
// server runs as that user through runuser. Local connections are trusted
// (user postgres); TCP ones need a password (scram-sha-256).
//
//   auto server = PgServer::Create();  // error: binaries missing, initdb/pg_ctl failed
//   Database::Open(server->url("postgres"));
// Or one server for all the tests of a process (SharedPgServer), a fresh
// database for each (NewDatabase), and TUNED_REQUIRE_POSTGRES() first in
// each test that needs it.
#pragma once

#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "core/status.h"

namespace tuned {

struct PgServerOptions {
  bool tcp = false;  // also listen on 127.0.0.1:port (password logins)
};

class PgServer {
 public:
  using Options = PgServerOptions;

  /// True when TUNED_SKIP_POSTGRES=1: the PostgreSQL tests skip (else a
  /// missing server fails them).
  static bool SkipRequested() {
    const char* v = std::getenv("TUNED_SKIP_POSTGRES");
    return v != nullptr && std::string(v) == "1";
  }

  /// initdb + start, with the binaries of $TUNED_POSTGRES_BIN if set, else
  /// the newest /usr/lib/postgresql/*/bin. FAILED_PRECONDITION when they are
  /// missing, INTERNAL when a step fails (with its output).
  static absl::StatusOr<std::unique_ptr<PgServer>> Create(Options options = {}) {
    std::unique_ptr<PgServer> s(new PgServer(options));
    if (absl::Status st = s->Init(); !st.ok()) return st;
    return s;
  }

  ~PgServer() {
    if (running_) (void)Stop();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
    if (watchdog_fd_ >= 0) close(watchdog_fd_);  // the watchdog finds nothing left to do
    if (watchdog_pid_ > 0) waitpid(watchdog_pid_, nullptr, 0);
  }

  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  /// libpq URL of database `dbname` as the superuser postgres, on the socket.
  std::string url(const std::string& dbname) const {
    return absl::StrCat("postgresql://postgres@/", dbname, "?host=", socket_dir(), "&port=", port_);
  }
  /// libpq URL over TCP (Options::tcp) as `user` with `password`.
  std::string tcp_url(const std::string& user, const std::string& password,
                      const std::string& dbname) const {
    return absl::StrCat("postgresql://", user, ":", password, "@127.0.0.1:", port_, "/", dbname);
  }
  int port() const { return port_; }
  std::string socket_dir() const { return dir_ + "/sock"; }

  /// Runs `sql` (one or more statements) in database `dbname`.
  absl::Status Exec(const std::string& sql, const std::string& dbname = "postgres") const {
    PGconn* conn = PQconnectdb(url(dbname).c_str());
    absl::Status s;
    if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
      s = absl::InternalError(absl::StrCat("connect: ", PQerrorMessage(conn)));
    } else {
      PGresult* res = PQexec(conn, sql.c_str());
      const ExecStatusType st = PQresultStatus(res);
      if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        s = absl::InternalError(absl::StrCat(sql, ": ", PQerrorMessage(conn)));
      }
      PQclear(res);
    }
    PQfinish(conn);
    return s;
  }
  absl::Status CreateDatabase(const std::string& name) const {
    return Exec(absl::StrCat("CREATE DATABASE \"", name, "\""));
  }
  /// A new, empty database ("test_1", "test_2", ...): its url().
  absl::StatusOr<std::string> NewDatabase() {
    const std::string name = absl::StrCat("test_", ++databases_);
    TUNED_RETURN_IF_ERROR(CreateDatabase(name));
    return url(name);
  }

  /// Stops the server at once (as a crash would: pg_ctl -m immediate).
  absl::Status Stop() {
    TUNED_RETURN_IF_ERROR(
        Run(absl::StrCat(Bin("pg_ctl"), " -D ", dir_, "/data -m immediate -w stop")));
    running_ = false;
    return absl::OkStatus();
  }
  /// Starts it (again, after Stop): the same data, socket and port.
  absl::Status Start() {
    std::string opts = absl::StrCat("-k ", socket_dir(), " -p ", port_,
                                    " -c fsync=off -c full_page_writes=off -c listen_addresses=",
                                    options_.tcp ? "127.0.0.1" : "''");
    TUNED_RETURN_IF_ERROR(Run(absl::StrCat(Bin("pg_ctl"), " -D ", dir_, "/data -l ", dir_,
                                           "/server.log -w -t 60 -o \"", opts, "\" start")));
    running_ = true;
    return absl::OkStatus();
  }

 private:
  explicit PgServer(Options options) : options_(options) {}

  absl::Status Init() {
    std::error_code ec;
    auto complete = [](const std::string& bin) {
      return std::filesystem::exists(bin + "/initdb") && std::filesystem::exists(bin + "/pg_ctl") &&
             std::filesystem::exists(bin + "/postgres");
    };
    if (const char* env = std::getenv("TUNED_POSTGRES_BIN"); env != nullptr && *env != '\0') {
      if (complete(env)) bin_ = env;
    } else {
      for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
        const std::string bin = e.path().string() + "/bin";
        if (complete(bin) && bin > bin_) bin_ = bin;  // the newest version
      }
    }
    if (bin_.empty()) {
      return absl::FailedPreconditionError(
          "PostgreSQL server binaries not found (initdb, pg_ctl, postgres in $TUNED_POSTGRES_BIN "
          "or /usr/lib/postgresql/*/bin): install Debian's postgresql package "
          "(scripts/deps.sh), or set TUNED_SKIP_POSTGRES=1 to skip the PostgreSQL tests");
    }
    std::string tmpl = (std::filesystem::temp_directory_path() / "tuned-pg-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("mkdtemp failed");
    dir_ = tmpl;
    std::filesystem::create_directory(socket_dir(), ec);
    if (ec) return absl::InternalError(absl::StrCat("mkdir ", socket_dir(), ": ", ec.message()));
    if (geteuid() == 0) {
      if (getpwnam("nobody") == nullptr) {
        return absl::FailedPreconditionError(
            "running as root, and PostgreSQL refuses root: user 'nobody' is needed to run it");
      }
      user_ = "nobody";
      TUNED_RETURN_IF_ERROR(Run(absl::StrCat("chown -R nobody ", dir_), /*as_user=*/false));
    }
    std::filesystem::permissions(socket_dir(), std::filesystem::perms::all, ec);
    TUNED_RETURN_IF_ERROR(StartWatchdog());
    port_ = FreePort();
    TUNED_RETURN_IF_ERROR(Run(absl::StrCat(Bin("initdb"), " -D ", dir_,
                                           "/data -U postgres --auth-local=trust"
                                           " --auth-host=scram-sha-256 --no-sync -E UTF8"
                                           " --locale=C")));
    return Start();
  }

  std::string Bin(const std::string& name) const { return bin_ + "/" + name; }

  /// A shell that waits for the end of a pipe whose other end only this
  /// process holds (close-on-exec), then stops the server and removes the
  /// directory: the cleanup of a test process that crashed.
  absl::Status StartWatchdog() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
    const std::string script = absl::StrCat(
        "trap '' INT TERM HUP; read -r _; ", user_.empty() ? "" : "runuser -u nobody -- ",
        Bin("pg_ctl"), " -D ", dir_, "/data -m immediate -w stop >/dev/null 2>&1; rm -rf ", dir_);
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError("fork failed");
    if (pid == 0) {  // only async-signal-safe calls until exec
      dup2(fds[0], 0);
      execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[0]);
    watchdog_fd_ = fds[1];
    watchdog_pid_ = pid;
    return absl::OkStatus();
  }

  /// Runs `cmd` through sh in dir_ (as `nobody` when root), its output
  /// logged; INTERNAL with that output when it fails.
  absl::Status Run(const std::string& cmd, bool as_user = true) const {
    const std::string log = dir_ + "/cmd.log";
    const std::string full =
        absl::StrCat("cd ", dir_, " && ", as_user && !user_.empty() ? "runuser -u nobody -- " : "",
                     cmd, " >", log, " 2>&1");
    if (std::system(full.c_str()) == 0) return absl::OkStatus();
    std::ifstream in(log);
    std::stringstream out;
    out << in.rdbuf();
    std::ifstream server(dir_ + "/server.log");
    std::stringstream server_log;
    server_log << server.rdbuf();
    return absl::InternalError(absl::StrCat("PgServer: `", cmd, "` failed:\n", out.str(),
                                            "\nserver.log:\n", server_log.str()));
  }

  /// A TCP port free on 127.0.0.1 now (the kernel's pick); Unix sockets
  /// only need it unique in their directory.
  static int FreePort() {
    int port = 20000 + getpid() % 20000;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return port;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    close(fd);
    return port;
  }

  Options options_;
  std::string bin_, dir_, user_;
  int port_ = 0;
  bool running_ = false;
  int watchdog_fd_ = -1;
  pid_t watchdog_pid_ = 0;
  int databases_ = 0;
};

/// The test process's server (also on 127.0.0.1), started on first use and
/// stopped at exit; its error if it could not start.
inline absl::StatusOr<std::unique_ptr<PgServer>>& SharedPgServer() {
  static absl::StatusOr<std::unique_ptr<PgServer>> server = PgServer::Create({.tcp = true});
  return server;
}

/// First in a test (or its SetUp) that needs SharedPgServer(): skips the
/// test with TUNED_SKIP_POSTGRES=1, fails it when there is no server.
#define TUNED_REQUIRE_POSTGRES()                                                       \
  do {                                                                                 \
    if (::tuned::PgServer::SkipRequested()) GTEST_SKIP() << "TUNED_SKIP_POSTGRES=1";   \
    if (!::tuned::SharedPgServer().ok()) FAIL() << ::tuned::SharedPgServer().status(); \
  } while (0)

}  // namespace tuned
