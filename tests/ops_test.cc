// The daemon run as an operator runs it, through real channels: the `tuned`
// binary with its worker in compile-only mode (no GPU), started here with
// flags, reached over its Unix socket, its TLS port (certificates made at test
// time with the openssl CLI), its health and reflection services, its
// Prometheus endpoint and the systemd notify socket.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "families/family.h"
#include "tests/daemon_process.h"
#include "families/spec/spec.h"
#include "tuned/client.h"

namespace tuned {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;



// Runs a shell command; true if it exited 0.
bool Sh(const std::string& cmd) { return std::system(cmd.c_str()) == 0; }

// Ports of the TCP sockets in LISTEN state that process `pid` holds.
std::set<int> ListeningTcpPorts(pid_t pid) {
  std::set<std::string> inodes;
  for (const auto& e : fs::directory_iterator(fs::path("/proc") / std::to_string(pid) / "fd")) {
    std::error_code ec;
    const std::string target = fs::read_symlink(e.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::set<int> ports;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream lines(ReadAll(table));
    std::string line;
    std::getline(lines, line);  // header
    while (std::getline(lines, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, skip, inode;
      f >> sl >> local >> remote >> state;
      for (int i = 0; i < 5; ++i) f >> skip;  // tx_queue:rx_queue tr:when retrnsmt uid timeout
      f >> inode;
      if (state == "0A" && inodes.count(inode) > 0) {
        ports.insert(std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16));
      }
    }
  }
  return ports;
}

// GET http://127.0.0.1:port/path; the body, or "" if it could not connect.
std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) response.append(buf, n);
    }
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// Value of the sample `series` (name with its labels, as printed) in
// Prometheus text, or -1 if absent.
double Sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// A datagram socket standing in for systemd's NOTIFY_SOCKET.
class NotifySocket {
 public:
  explicit NotifySocket(const fs::path& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~NotifySocket() { close(fd_); }
  bool bound() const { return bound_; }
  /// The next datagram, "" after 10 s without one.
  std::string Next() {
    char buf[1024];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, n) : "";
  }

 private:
  fs::path path_;
  int fd_;
  bool bound_ = false;
};

// The real daemon, started with flags (tests/daemon_process.h).
class Daemon : public DaemonProcess {
 public:
  Daemon(const fs::path& dir, std::vector<std::string> flags,
         std::vector<std::string> env_extra = {})
      : DaemonProcess(TUNED_BIN_DIR "/tuned", dir, std::move(flags), std::move(env_extra)) {}
};

class OpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tuned_ops_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A CA, a server certificate for localhost/127.0.0.1 and a client
  // certificate signed by the CA, made now (P-256 keys, valid one day).
  void MakeCertificates() {
    const std::string d = dir_.string();
    const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    ASSERT_TRUE(Sh("cd " + d + " && openssl req -x509" + key +
                   " -days 1 -subj /CN=tuned-test-ca -keyout ca.key -out ca.pem 2>/dev/null"));
    for (const std::string name : {"server", "client"}) {
      const std::string ext = name == "server" ? "subjectAltName=DNS:localhost,IP:127.0.0.1"
                                              : "extendedKeyUsage=clientAuth";
      ASSERT_TRUE(Sh("cd " + d + " && openssl req" + key + " -subj /CN=" + name + " -keyout " + name +
                     ".key -out " + name + ".csr 2>/dev/null && printf '" + ext + "' > " + name +
                     ".ext && openssl x509 -req -in " + name +
                     ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile " + name +
                     ".ext -out " + name + ".pem 2>/dev/null"));
    }
    // alice may register kernel specs (the "register" scope); bob may not.
    std::ofstream(dir_ / "tokens") << "# NAME:TOKEN [SCOPES]\nalice:" << kAlice << " register\n\nbob:" << kBob << "\n";
    std::filesystem::permissions(dir_ / "tokens", std::filesystem::perms::owner_read |
                                                      std::filesystem::perms::owner_write);
  }
  std::vector<std::string> TlsFlags() const {
    return {"--listen", "127.0.0.1:0", "--tls-cert", (dir_ / "server.pem").string(), "--tls-key",
            (dir_ / "server.key").string(), "--token-file", (dir_ / "tokens").string()};
  }
  ClientOptions As(const std::string& token) const {
    ClientOptions o;
    o.tls_ca = (dir_ / "ca.pem").string();
    o.token = token;
    return o;
  }

  static constexpr const char* kAlice = "alice-0123456789abcdef";
  static constexpr const char* kBob = "bob-fedcba9876543210xyz";
  fs::path dir_;
};

TEST_F(OpsTest, DefaultIsTheUnixSocketOnlyGroupReadableAndTellsSystemd) {
  NotifySocket notify(dir_ / "notify.sock");
  ASSERT_TRUE(notify.bound());
  Daemon d(dir_, {}, {"NOTIFY_SOCKET=" + (dir_ / "notify.sock").string()});
  ASSERT_TRUE(d.WaitServing()) << ReadAll(d.log());
  EXPECT_EQ(notify.Next(), "READY=1\nSTATUS=serving");
  struct stat st{};
  ASSERT_EQ(stat(d.socket().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  ASSERT_EQ(stat(d.socket().parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
  EXPECT_TRUE(ListeningTcpPorts(d.pid()).empty());
  Client client(d.address());
  auto device = client.DescribeDevice();
  ASSERT_TRUE(device.ok()) << device.status();
  auto job = client.SubmitSweep(TransposeProblem(64, 64));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->client(), "local");
  kill(d.pid(), SIGTERM);
  EXPECT_EQ(notify.Next(), "STOPPING=1\nSTATUS=draining");
  EXPECT_EQ(d.WaitExit(), 0) << ReadAll(d.log());
  EXPECT_FALSE(fs::exists(d.socket()));
}

TEST_F(OpsTest, HealthFollowsDrainingAndReflectionListsTheServices) {
  Daemon d(dir_, {"--drain-seconds", "3"});
  ASSERT_TRUE(d.WaitServing()) << ReadAll(d.log());
  auto channel = grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials());

  auto health = grpc::health::v1::Health::NewStub(channel);
  auto check = [&](const std::string& service) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    const grpc::Status s = health->Check(&ctx, req, &resp);
    return s.ok() ? grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status())
                  : "error " + std::to_string(s.error_code());
  };
  EXPECT_EQ(check(""), "SERVING");
  EXPECT_EQ(check("tuned.v1.Tuner"), "SERVING");
  EXPECT_EQ(check("no.such.Service"), "error " + std::to_string(grpc::StatusCode::NOT_FOUND));

  // Reflection, as grpcurl list does it.
  auto reflection = grpc::reflection::v1alpha::ServerReflection::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  auto stream = reflection->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest req;
  req.set_list_services("*");
  ASSERT_TRUE(stream->Write(req));
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_TRUE(stream->Finish().ok());
  std::set<std::string> services;
  for (const auto& s : resp.list_services_response().service()) services.insert(s.name());
  EXPECT_TRUE(services.count("tuned.v1.Tuner")) << resp.ShortDebugString();
  EXPECT_TRUE(services.count("grpc.health.v1.Health")) << resp.ShortDebugString();
  EXPECT_TRUE(services.count("grpc.reflection.v1alpha.ServerReflection")) << resp.ShortDebugString();

  // Watch: the status now, then its change; a service never set is SERVICE_UNKNOWN.
  using Response = grpc::health::v1::HealthCheckResponse;
  grpc::ClientContext watch_ctx, unknown_ctx;
  watch_ctx.set_deadline(std::chrono::system_clock::now() + 20s);
  unknown_ctx.set_deadline(std::chrono::system_clock::now() + 20s);
  grpc::health::v1::HealthCheckRequest whole, unknown;
  unknown.set_service("no.such.Service");
  auto watch = health->Watch(&watch_ctx, whole);
  auto watch_unknown = health->Watch(&unknown_ctx, unknown);
  Response seen;
  ASSERT_TRUE(watch->Read(&seen));
  EXPECT_EQ(seen.status(), Response::SERVING);
  ASSERT_TRUE(watch_unknown->Read(&seen));
  EXPECT_EQ(seen.status(), Response::SERVICE_UNKNOWN);

  // SIGTERM: NOT_SERVING and no new work for --drain-seconds, then exit 0.
  const auto killed = std::chrono::steady_clock::now();
  kill(d.pid(), SIGTERM);
  ASSERT_TRUE(watch->Read(&seen));
  EXPECT_EQ(seen.status(), Response::NOT_SERVING);
  // The watch ends at the drain's end, before the servers' Shutdown: one
  // left open would hold Shutdown to its 1 s deadline, and end after it.
  std::chrono::steady_clock::time_point watch_ended;
  std::thread watcher([&] {
    Response more;
    while (watch->Read(&more)) {
    }
    watch_ended = std::chrono::steady_clock::now();
  });
  std::string status;
  for (int i = 0; i < 100 && (status = check("")) == "SERVING"; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(status, "NOT_SERVING");
  EXPECT_EQ(check("tuned.v1.Tuner"), "NOT_SERVING");
  Client client(d.address());
  auto job = client.SubmitSweep(TransposeProblem(64, 64));
  EXPECT_EQ(job.status().code(), absl::StatusCode::kUnavailable) << job.status();
  EXPECT_TRUE(client.ListJobs().ok());  // reads go on while draining
  EXPECT_EQ(d.WaitExit(), 0) << ReadAll(d.log());
  watcher.join();
  EXPECT_LT(watch_ended - killed, 3s + 700ms);
  EXPECT_FALSE(watch_unknown->Read(&seen));
  watch->Finish();
  watch_unknown->Finish();
}

TEST_F(OpsTest, ListenWithoutTlsIsRefusedSayingWhatToPass) {
  Daemon d(dir_, {"--listen", "127.0.0.1:0"});
  EXPECT_EQ(d.WaitExit(), 2);
  EXPECT_NE(ReadAll(d.log()).find("pass --tls-cert FILE --tls-key FILE --token-file FILE"),
            std::string::npos)
      << ReadAll(d.log());
  EXPECT_FALSE(fs::exists(d.socket()));

  MakeCertificates();
  std::vector<std::string> flags = TlsFlags();
  flags[flags.size() - 1] = (dir_ / "missing-tokens").string();
  Daemon missing(dir_, flags);
  EXPECT_EQ(missing.WaitExit(), 1);
  EXPECT_NE(ReadAll(missing.log()).find("cannot read token file"), std::string::npos)
      << ReadAll(missing.log());
}

TEST_F(OpsTest, TlsPortNeedsTheTokenAndEnforcesPerClientQuotas) {
  MakeCertificates();
  const int64_t transpose_configs =
      static_cast<int64_t>(TransposeFamily().ValidSpace(Sm90ReferenceDevice(), nullptr).size());
  const int64_t sgemm_configs = static_cast<int64_t>(
      GemmFamily().ValidSpace(Sm90ReferenceDevice(), {256, 256, 256}, nullptr).size());
  ASSERT_GT(sgemm_configs, transpose_configs);
  std::vector<std::string> flags = TlsFlags();
  flags.insert(flags.end(), {"--max-jobs-per-client", "1", "--max-configs-per-client",
                             std::to_string(transpose_configs)});
  Daemon d(dir_, flags);
  ASSERT_TRUE(d.WaitServing()) << ReadAll(d.log());
  const int port = d.LoggedPort("listening tcp 127.0.0.1:");
  ASSERT_GT(port, 0) << ReadAll(d.log());
  // (gRPC may hold more than one listening socket for a port.)
  EXPECT_EQ(ListeningTcpPorts(d.pid()).count(port), 1u);
  const std::string tcp = "127.0.0.1:" + std::to_string(port);

  Client alice(tcp, As(kAlice)), bob(tcp, As(kBob)), nobody(tcp, As("")),
      wrong(tcp, As("not-a-valid-token-at-all"));
  auto job = alice.SubmitSweep(TransposeProblem(64, 64));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->client(), "alice");

  for (Client* c : {&nobody, &wrong}) {
    EXPECT_EQ(c->SubmitSweep(TransposeProblem(64, 32)).status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(c->CancelJob(job->id()).status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(c->ListJobs().status().code(), absl::StatusCode::kUnauthenticated);
  }
  EXPECT_NE(wrong.ListJobs().status().message().find("invalid token"), std::string::npos);
  auto serving = nobody.Serving();  // health checks need no token (a wrong one is refused)
  EXPECT_TRUE(serving.ok() && *serving) << serving.status();
  EXPECT_EQ(wrong.Serving().status().code(), absl::StatusCode::kUnauthenticated);

  // A plaintext client against the TLS port fails cleanly, and the daemon goes on.
  {
    auto plain = v1::Tuner::NewStub(grpc::CreateChannel(tcp, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    v1::ListJobsResponse resp;
    const grpc::Status s = plain->ListJobs(&ctx, {}, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  }

  // Quotas, per client: alice has her one job; bob's sgemm sweep is too many configs.
  auto second = alice.SubmitSweep(TransposeProblem(128, 64));
  ASSERT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted) << second.status();
  EXPECT_NE(second.status().message().find("client 'alice' has 1 queued or running jobs; the limit is 1"),
            std::string::npos)
      << second.status();
  auto big = bob.SubmitSweep(SgemmProblem(256, 256, 256));
  ASSERT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted) << big.status();
  EXPECT_NE(big.status().message().find("client 'bob' has 0 configs queued; this job adds " +
                                        std::to_string(sgemm_configs) + " and the limit is " +
                                        std::to_string(transpose_configs)),
            std::string::npos)
      << big.status();
  auto bobs = bob.SubmitSweep(TransposeProblem(64, 32));
  ASSERT_TRUE(bobs.ok()) << bobs.status();
  EXPECT_EQ(bobs->client(), "bob");

  // A remote client cancels only its own jobs.
  EXPECT_EQ(bob.CancelJob(job->id()).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(alice.CancelJob(job->id()).ok());
  EXPECT_TRUE(bob.CancelJob(bobs->id()).ok());

  // Nothing else was queued: the Unix socket (no token) sees the two jobs.
  auto jobs = Client(d.address()).ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].client(), "bob");
  EXPECT_EQ((*jobs)[1].client(), "alice");
}

// Over TCP a kernel spec is registered only with a token whose line grants
// the "register" scope; the Unix socket's local users need none.
TEST_F(OpsTest, RegisteringOverTcpNeedsTheRegisterScope) {
  MakeCertificates();
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--allow-user-kernels");
  Daemon d(dir_, flags);
  ASSERT_TRUE(d.WaitServing()) << ReadAll(d.log());
  const std::string tcp = "127.0.0.1:" + std::to_string(d.LoggedPort("listening tcp 127.0.0.1:"));
  auto spec = spec::LoadSpecFile(std::string(TUNED_EXAMPLES_DIR) + "/matmul/spec.toml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  Client alice(tcp, As(kAlice)), bob(tcp, As(kBob)), nobody(tcp, As(""));
  auto refused = bob.RegisterFamily(*spec);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied) << refused.status();
  EXPECT_NE(refused.status().message().find("'register' scope"), std::string::npos) << refused.status();
  EXPECT_EQ(nobody.RegisterFamily(*spec).status().code(), absl::StatusCode::kUnauthenticated);
  auto families = Client(d.address()).ListFamilies();
  ASSERT_TRUE(families.ok());
  EXPECT_EQ(families->size(), 2u);  // nothing stored
  auto registered = alice.RegisterFamily(*spec);
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_EQ(registered->client(), "alice");
  // A kernel of the spec brought by import is the spec's code too: bob's is refused.
  v1::BestKernel kernel;
  kernel.mutable_problem()->set_family_name(spec->name());
  kernel.mutable_problem()->add_shape(256);
  kernel.mutable_problem()->add_shape(256);
  kernel.mutable_problem()->add_shape(256);
  auto device = bob.DescribeDevice();
  ASSERT_TRUE(device.ok()) << device.status();
  *kernel.mutable_device() = *device;
  for (const v1::SpecParam& p : spec->params()) {
    (*kernel.mutable_measurement()->mutable_config()->mutable_params())[p.name()] = p.values(0);
  }
  kernel.mutable_measurement()->set_status(v1::MEASUREMENT_OK);
  kernel.mutable_measurement()->set_median_ms(0.01);
  kernel.set_cubin("a client's cubin");
  kernel.set_entry("matmul");
  auto imported = bob.ImportKernel(kernel);
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kPermissionDenied) << imported.status();
  EXPECT_NE(imported.status().message().find("'register' scope"), std::string::npos) << imported.status();
  // An unknown scope in the token file stops the daemon at start, naming it.
  std::ofstream(dir_ / "tokens") << "carol:carol-0123456789abcdef admin\n";
  Daemon bad(dir_ / "bad", flags);
  EXPECT_FALSE(bad.WaitServing());
  EXPECT_NE(ReadAll(bad.log()).find("unknown scope 'admin'"), std::string::npos) << ReadAll(bad.log());
}

TEST_F(OpsTest, AnonymousReadsOnlyWhenAllowedAndMutualTls) {
  MakeCertificates();
  std::vector<std::string> flags = TlsFlags();
  flags.insert(flags.end(), {"--allow-anonymous-reads", "--tls-client-ca", (dir_ / "ca.pem").string()});
  Daemon d(dir_, flags);
  ASSERT_TRUE(d.WaitServing()) << ReadAll(d.log());
  const std::string tcp = "127.0.0.1:" + std::to_string(d.LoggedPort("listening tcp 127.0.0.1:"));

  ClientOptions no_cert = As(kAlice);
  EXPECT_EQ(Client(tcp, no_cert).ListJobs().status().code(), absl::StatusCode::kUnavailable);
  ClientOptions anonymous = As("");
  anonymous.tls_cert = (dir_ / "client.pem").string();
  anonymous.tls_key = (dir_ / "client.key").string();
  ClientOptions alice = anonymous;
  alice.token = kAlice;

  Client reader(tcp, anonymous);
  auto jobs = reader.ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_TRUE(jobs->empty());
  EXPECT_TRUE(reader.DescribeDevice().ok());
  EXPECT_EQ(reader.SubmitSweep(TransposeProblem(64, 64)).status().code(), absl::StatusCode::kUnauthenticated);
  // GetBest queues a sweep with tune_if_missing: that needs a token too.
  EXPECT_EQ(reader.GetBest(TransposeProblem(64, 64), /*tune_if_missing=*/true).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(reader.GetBest(TransposeProblem(64, 64)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Client(d.address()).ListJobs()->empty());

  auto best = Client(tcp, alice).GetBest(TransposeProblem(64, 64), /*tune_if_missing=*/true);
  EXPECT_EQ(best.status().code(), absl::StatusCode::kNotFound);  // nothing near, but queued:
  EXPECT_NE(best.status().message().find("queued job 1"), std::string::npos) << best.status();
  auto job = Client(d.address()).GetJob(1);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->client(), "alice");
}

TEST_F(OpsTest, MetricsEndpointServesTheSeriesAfterAJob) {
  Daemon d(dir_, {"--metrics-listen", "127.0.0.1:0"});
  ASSERT_TRUE(d.WaitServing()) << ReadAll(d.log());
  const int port = d.LoggedPort("metrics on http://127.0.0.1:");
  ASSERT_GT(port, 0) << ReadAll(d.log());
  Client client(d.address());
  auto job = client.SubmitSweep(TransposeProblem(40, 24));
  ASSERT_TRUE(job.ok()) << job.status();
  auto end = client.WatchJob(job->id(), [](const v1::Job&) {});
  ASSERT_TRUE(end.ok()) << end.status();
  ASSERT_EQ(end->state(), v1::JOB_DONE);
  EXPECT_EQ(client.GetBest(TransposeProblem(40, 24)).status().code(), absl::StatusCode::kNotFound);

  const std::string text = HttpGet(port, "/metrics");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(Sample(text, R"(tuned_configs_measured_total{status="compiled"})"), end->total()) << text;
  EXPECT_EQ(Sample(text, "tuned_compile_seconds_count"), end->total()) << text;
  EXPECT_GT(Sample(text, "tuned_compile_seconds_sum"), 0.001 * end->total()) << text;
  EXPECT_EQ(Sample(text, R"(tuned_compile_seconds_bucket{le="+Inf"})"), end->total()) << text;
  EXPECT_EQ(Sample(text, "tuned_measure_seconds_count"), 0) << text;  // compile-only runs nothing
  EXPECT_EQ(Sample(text, R"(tuned_queue_depth{state="queued"})"), 0) << text;
  EXPECT_EQ(Sample(text, R"(tuned_queue_depth{state="running"})"), 0) << text;
  EXPECT_EQ(Sample(text, R"(tuned_lookups_total{match="miss"})"), 1) << text;
  EXPECT_EQ(Sample(text, R"(tuned_lookups_total{match="exact"})"), 0) << text;
  EXPECT_EQ(Sample(text, "tuned_worker_restarts_total"), 0) << text;
  EXPECT_NE(text.find("# TYPE tuned_compile_seconds histogram"), std::string::npos);

  // The queue depth is read at each scrape: a second job, queued behind nothing, shows up.
  auto queued = client.SubmitSweep(TransposeProblem(48, 24));
  ASSERT_TRUE(queued.ok());
  const std::string during = HttpGet(port, "/metrics");
  EXPECT_EQ(Sample(during, R"(tuned_queue_depth{state="queued"})") +
                Sample(during, R"(tuned_queue_depth{state="running"})"),
            1)
      << during;
}

// Settings: a flag beats TUNED_*, which beats the config file (--print-config
// prints the settings in force and exits).
TEST_F(OpsTest, FlagsThenEnvironmentThenConfigFile) {
  std::ofstream(dir_ / "tuned.toml") << "gpu = 3\nmax-jobs-per-client = 5\nlog-level = \"debug\"\n"
                                        "allow-anonymous-reads = true\n";
  // `env` VAR=VALUE... before the binary, `flags` after it.
  auto settings = [&](const std::string& env, const std::string& flags) {
    const std::string out = (dir_ / "out.txt").string();
    EXPECT_TRUE(Sh("env -u TUNED_GPU -u TUNED_CONFIG " + env + " " TUNED_BIN_DIR "/tuned " + flags +
                   " --print-config > " + out));
    std::map<std::string, std::string> kv;
    std::istringstream lines(ReadAll(out));
    for (std::string line; std::getline(lines, line);) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return kv;
  };
  const std::string toml = (dir_ / "tuned.toml").string();
  auto file = settings("", "--config " + toml);
  EXPECT_EQ(file["gpu"], "3");
  EXPECT_EQ(file["max-jobs-per-client"], "5");
  EXPECT_EQ(file["log-level"], "\"debug\"");
  EXPECT_EQ(file["allow-anonymous-reads"], "true");
  auto env = settings("TUNED_GPU=4 TUNED_LOG_LEVEL=warn TUNED_CONFIG=" + toml, "");
  EXPECT_EQ(env["gpu"], "4");
  EXPECT_EQ(env["log-level"], "\"warn\"");
  EXPECT_EQ(env["max-jobs-per-client"], "5");
  auto flag = settings("TUNED_GPU=4 TUNED_CONFIG=" + toml, "--gpu 7 --max-jobs-per-client 2");
  EXPECT_EQ(flag["gpu"], "7");
  EXPECT_EQ(flag["max-jobs-per-client"], "2");
  EXPECT_EQ(flag["log-level"], "\"debug\"");
  auto none = settings("", "");
  EXPECT_EQ(none["gpu"], "0");
  EXPECT_EQ(none["max-jobs-per-client"], "16");  // the defaults
  std::ofstream(dir_ / "bad.toml") << "no-such-setting = 1\n";
  EXPECT_FALSE(Sh(TUNED_BIN_DIR "/tuned --print-config --config " + (dir_ / "bad.toml").string() +
                  " 2>/dev/null >/dev/null"));
  // --print-config is a command, not a setting: a config file that sets it
  // is refused (it made the daemon print its settings and exit 0).
  std::ofstream(dir_ / "print.toml") << "print-config = true\n";
  EXPECT_TRUE(Sh("timeout 20 " TUNED_BIN_DIR "/tuned --config " + (dir_ / "print.toml").string() +
                 " 2>&1 >/dev/null | grep -q \"'print-config' is a flag of the command line\""));
}

}  // namespace
}  // namespace tuned
