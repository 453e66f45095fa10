// A hostile upstream in front of the real kernelhubd: an error body nested 200,000 deep once
// killed the daemon (SIGSEGV in the recursive dump() of the "error" member), taking the
// host's kernel service down for every user. The upstream here is a small cpp-httplib server
// on loopback that answers every request with that 404 while `hostile` is set, and otherwise
// relays to the fixture Hub, so the same daemon can then be asked for a real fetch.
#include <httplib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <utility>

#include "daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
using nlohmann::json;

namespace {

const std::string kDeepBody =
    "{\"error\":" + std::string(200'000, '[') + std::string(200'000, ']') + "}";

class HostileUpstream {
 public:
  explicit HostileUpstream(std::string good_endpoint) : good_(std::move(good_endpoint)) {
    const auto handle = [this](const httplib::Request& req, httplib::Response& res) {
      if (hostile) {
        ++hostile_answers;
        res.status = 404;
        res.set_content(kDeepBody, "application/json");
        return;
      }
      relay(req, res);
    };
    server_.Get(".*", handle);  // httplib answers HEAD with the GET handler
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("cannot bind the hostile upstream");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  HostileUpstream(const HostileUpstream&) = delete;
  HostileUpstream& operator=(const HostileUpstream&) = delete;
  ~HostileUpstream() {
    server_.stop();
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::atomic<bool> hostile{true};
  std::atomic<int> hostile_answers{0};

 private:
  // Forwards to the fixture Hub with the client's Host, so its Location and Link headers
  // point back here.
  void relay(const httplib::Request& req, httplib::Response& res) const {
    httplib::Client client(good_);
    httplib::Headers headers;
    for (const auto& name : {"Host", "Range", "Authorization", "Accept-Encoding"}) {
      if (req.has_header(name)) headers.emplace(name, req.get_header_value(name));
    }
    std::string target = req.path;
    if (!req.params.empty()) target += "?" + httplib::detail::params_to_query_str(req.params);
    auto answer = req.method == "HEAD" ? client.Head(target.c_str(), headers)
                                       : client.Get(target.c_str(), headers);
    if (!answer) {
      res.status = 502;
      return;
    }
    res.status = answer->status;
    for (const auto& [name, value] : answer->headers) {
      if (name != "Content-Length" && name != "Transfer-Encoding" && name != "Connection")
        res.headers.emplace(name, value);
    }
    res.body = answer->body;
  }

  std::string good_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace

TEST_CASE("a 404 body nested 200,000 deep gives a typed error and kernelhubd keeps serving",
          "[daemon][hostile]") {
  Workspace ws;
  HostileUpstream upstream(ws.hub.endpoint());
  auto config = ws.config();
  config.hf_endpoint = upstream.endpoint();
  config.env["KERNELHUB_RETRY_BASE_MS"] = "1";
  DaemonProcess daemon(config);

  WireClient first(ws.socket);
  REQUIRE(first.hello().at("type") == "hello");
  const auto failed = first.fetch(kRelu, 1);
  INFO(failed.message.dump());
  REQUIRE(upstream.hostile_answers > 0);  // the fault happened
  REQUIRE(failed.message.at("type") == "error");
  const std::string code = failed.message.at("code");
  CHECK(kernelhub::error_code_from_string(code).has_value());
  const std::string message = failed.message.at("message");
  CHECK(message.find("HTTP 404") != std::string::npos);
  CHECK(message.size() < 1000);
  REQUIRE(daemon.child().running());

  // The next client is served: status at once, then a real fetch once the upstream behaves.
  WireClient second(ws.socket);
  REQUIRE(second.hello().at("type") == "hello");
  CHECK(second.status().at("type") == "status");
  upstream.hostile = false;
  const auto fetched = second.fetch(kRelu, 1);
  INFO(fetched.message.dump());
  REQUIRE(fetched.message.at("type") == "fetched");
  CHECK(check_handout(fetched).empty());
  CHECK(daemon.child().running());
}

TEST_CASE("kernelhub download without a daemon reports the deep-nesting 404 and exits cleanly",
          "[daemon][hostile]") {
  Workspace ws;
  HostileUpstream upstream(ws.hub.endpoint());
  const auto result =
      run_kernelhub({"download", kRelu, "--version", "1", "--torch-version", "2.15", "--cache-dir",
                     ws.cache.string()},
                    {{"HF_ENDPOINT", upstream.endpoint()},
                     {"KERNELHUB_SOCKET", (ws.dir.path() / "no-daemon.sock").string()},
                     {"KERNELHUB_RETRY_BASE_MS", "1"}});
  INFO(result.err);
  REQUIRE(upstream.hostile_answers > 0);
  CHECK(result.exit_code > 0);
  CHECK(result.exit_code < 128);  // an exit code, not a signal
  CHECK(result.err.find("HTTP 404") != std::string::npos);
  CHECK(result.err.size() < 2000);
}
