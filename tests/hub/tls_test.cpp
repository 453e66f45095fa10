// TLS against the test Hub served over HTTPS with a throwaway CA made at test time by the
// openssl command: an unknown CA fails at once with a clear error (no retries), the CA given
// through each of the CA variables succeeds (LFS redirect included), and a redirect from
// https to plain http is refused before anything is asked of the http server.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>

#include "hub/fetch_fixture.hpp"
#include "support/fault_hub/fault_hub.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

const char* const kOpenssl = "/usr/bin/openssl";

void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{kOpenssl};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto result = run_command(argv);
  INFO("openssl " << args.front() << ": " << result.err);
  REQUIRE(result.exit_code == 0);
}

// A CA, a server certificate it signs for 127.0.0.1 and localhost, and a hashed CA directory.
struct TestPki {
  explicit TestPki(const fs::path& dir)
      : ca(dir / "ca.pem"), cert(dir / "server.pem"), key(dir / "server.key"), ca_dir(dir / "cas") {
    const auto ca_key = (dir / "ca.key").string();
    const auto csr = (dir / "server.csr").string();
    const auto ext = dir / "server.ext";
    std::ofstream(ext) << "basicConstraints=CA:FALSE\n"
                          "keyUsage=critical,digitalSignature\n"
                          "extendedKeyUsage=serverAuth\n"
                          "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", ca_key, "-out", ca.string(), "-days", "2", "-subj", "/CN=kernelhub test CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
             "keyUsage=critical,keyCertSign,cRLSign"});
    openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", key.string(), "-out", csr, "-subj", "/CN=127.0.0.1"});
    openssl({"x509", "-req", "-in", csr, "-CA", ca.string(), "-CAkey", ca_key, "-CAcreateserial",
             "-out", cert.string(), "-days", "2", "-extfile", ext.string()});
    fs::create_directories(ca_dir);
    fs::copy_file(ca, ca_dir / "test-ca.pem");
    openssl({"rehash", ca_dir.string()});
  }
  fs::path ca, cert, key, ca_dir;
};

// The fixture's store served over HTTPS as well (the fixture's own server stays plain http).
struct TlsHub {
  TlsHub() : pki(fx.tmp.path()) {
    hub::server::ServerOptions options;
    options.root = fx.store;
    options.tls_cert = pki.cert;
    options.tls_key = pki.key;
    https = std::make_unique<testing::FaultHub>(options);
    REQUIRE(https->start());
    REQUIRE(https->endpoint().rfind("https://127.0.0.1:", 0) == 0);
  }
  // The fixture's variables, the https endpoint, real one-second retry units (a retry would
  // show in the wall time), plus `vars`.
  hub::HubConfig config(const std::map<std::string, std::string>& vars) const {
    auto env = fx.env();
    env.set("HF_ENDPOINT", https->endpoint());
    env.set("KERNELHUB_RETRY_BASE_MS", "1000");
    for (const auto& [name, value] : vars) env.set(name, value);
    return hub::HubConfig::from(env);
  }
  FetchFixture fx;
  TestPki pki;
  std::unique_ptr<testing::FaultHub> https;
};

}  // namespace

TEST_CASE("CA variables: SSL_CERT_FILE, then REQUESTS_CA_BUNDLE, then CURL_CA_BUNDLE") {
  util::Environment env;
  CHECK_FALSE(hub::HubConfig::from(env).ca_file);
  CHECK_FALSE(hub::HubConfig::from(env).ca_dir);
  env.set("CURL_CA_BUNDLE", "/c");
  CHECK(hub::HubConfig::from(env).ca_file == "/c");
  env.set("REQUESTS_CA_BUNDLE", "/b");
  CHECK(hub::HubConfig::from(env).ca_file == "/b");
  env.set("SSL_CERT_FILE", "/a");
  CHECK(hub::HubConfig::from(env).ca_file == "/a");
  env.set("SSL_CERT_FILE", "");  // empty: unset, never "do not verify"
  CHECK(hub::HubConfig::from(env).ca_file == "/b");
  env.set("SSL_CERT_DIR", "/d");
  CHECK(hub::HubConfig::from(env).ca_dir == "/d");
}

TEST_CASE("an unknown CA fails at once with a TLS error that names the CA variables") {
  TlsHub hub;
  const auto start = Clock::now();
  auto result = hub.fx.fetch(FetchFixture::request(), hub.config({}));
  const auto elapsed = Clock::now() - start;
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::network);
  CHECK_THAT(result.error().message, Catch::Contains("TLS certificate verification failed"));
  CHECK_THAT(result.error().message, Catch::Contains("SSL_CERT_FILE"));
  CHECK_THAT(result.error().message, Catch::Contains("REQUESTS_CA_BUNDLE"));
  CHECK(hub.https->requests().empty());  // the handshake failed: no request was ever read
  CHECK(elapsed < std::chrono::milliseconds(900));  // one retry would have waited 1 s
}

TEST_CASE("the CA given through each variable makes the https download succeed") {
  TlsHub hub;
  const std::string var = GENERATE(as<std::string>{}, "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                                   "SSL_CERT_FILE", "SSL_CERT_DIR");
  INFO("CA given through " << var);
  std::map<std::string, std::string> vars;
  if (var == "SSL_CERT_DIR") {
    vars["SSL_CERT_DIR"] = hub.pki.ca_dir.string();
    // A bundle file that does not exist is a certificate problem too, not retried.
    vars["SSL_CERT_FILE"] = (hub.fx.tmp.path() / "no-such-bundle.pem").string();
    auto broken = hub.fx.fetch(FetchFixture::request(), hub.config(vars));
    REQUIRE_FALSE(broken);
    CHECK_THAT(broken.error().message, Catch::Contains("TLS certificate verification failed"));
    vars.erase("SSL_CERT_FILE");  // the directory alone must do
  } else {
    vars[var] = hub.pki.ca.string();
  }
  auto result = hub.fx.fetch(FetchFixture::request(), hub.config(vars));
  INFO((result ? std::string() : result.error().message));
  REQUIRE(result);
  CHECK(slurp(result->manifest.snapshot_path / "build" / kCpuVariant / kSoName) ==
        cpu_variant_files().at(kSoName));
  // Everything went over https, the LFS redirect to the object URL included.
  CHECK(hub.https->count("GET", "/lfs-objects/") >= 1);
  CHECK(hub.fx.server->requests().empty());
}

TEST_CASE("a redirect from https to plain http is refused") {
  TlsHub hub;
  testing::FaultPlan plan;
  plan.redirect_to = hub.fx.server->endpoint();  // the fixture's plain http server
  plan.path_filter = kSoName;
  hub.https->set_faults(plan);
  hub.fx.server->reset_requests();
  auto result =
      hub.fx.fetch(FetchFixture::request(), hub.config({{"SSL_CERT_FILE", hub.pki.ca.string()}}));
  std::size_t redirects = 0;
  for (const auto& r : hub.https->requests())
    redirects += r.status == 302 && r.path.find(kSoName) != std::string::npos ? 1 : 0;
  CHECK(redirects == 1);  // the fault happened, once: no retry either
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::malformed_response);
  CHECK_THAT(result.error().message, Catch::Contains("leaves https"));
  CHECK(hub.fx.server->requests().empty());  // the http server was never asked
}

TEST_CASE(
    "kernelhub-test-hub --tls-cert/--tls-key serves HTTPS, and --fault-trickle acts on /api/") {
  FetchFixture fx;
  TestPki pki(fx.tmp.path());
  const auto port_file = fx.tmp.path() / "port";
  BackgroundProcess serve({std::string(KH_BIN_DIR) + "/kernelhub-test-hub", "--root",
                           fx.store.string(), "--port", "0", "--port-file", port_file.string(),
                           "--tls-cert", pki.cert.string(), "--tls-key", pki.key.string(),
                           "--fault-trickle", "1", "--fault-scope", "api", "--fault-path-filter",
                           "/refs"});
  const int port = std::stoi(wait_for_file(port_file));
  auto env = fx.env();
  env.set("HF_ENDPOINT", "https://127.0.0.1:" + std::to_string(port));
  env.set("SSL_CERT_FILE", pki.ca.string());
  env.set("KERNELHUB_MIN_BYTES_PER_SECOND", "64");
  env.set("KERNELHUB_MIN_SPEED_WINDOW", "1");
  auto config = hub::HubConfig::from(env);
  config.max_retries = 0;
  const auto start = Clock::now();
  auto result = fx.fetch(FetchFixture::request(), config);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  REQUIRE_FALSE(result);
  // The TLS handshake succeeded (no certificate error): the trickled refs reply timed out.
  CHECK(result.error().code == ErrorCode::timeout);
  CHECK_THAT(result.error().message, Catch::Contains("https://127.0.0.1"));
  CHECK_THAT(result.error().message, Catch::Contains("/refs"));
  CHECK_THAT(result.error().message, Catch::Contains("too slow"));
  CHECK(seconds >= 1.0);
  CHECK(seconds < 3.0);
}
