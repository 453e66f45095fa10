// A trickled upstream through kernelhubd: every client waiting on the same flight gets the
// typed timeout (not a hang) within the configured bound, and the daemon serves the next one.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>

#include "tests/daemon/daemon_harness.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;
using Clock = std::chrono::steady_clock;

TEST_CASE("clients waiting on a trickled flight all get timeout and the daemon serves the next",
          "[daemon]") {
  // Floor 64 B/s over 1 s, and a 2 s deadline for an API call, retries included.
  DaemonHarness h(std::nullopt, {{"KERNELHUB_MIN_BYTES_PER_SECOND", "64"},
                                 {"KERNELHUB_MIN_SPEED_WINDOW", "1"},
                                 {"KERNELHUB_API_DEADLINE", "2"}});
  hub::server::FaultPlan plan;
  plan.trickle_bytes_per_second = 1;
  plan.scope = "api";
  plan.path_filter = "/api/";
  h.fx.server->set_faults(plan);
  h.fx.server->reset_requests();

  // Workers only collect (Catch2 asserts on this thread only): the final frame and its time.
  const auto start = Clock::now();
  std::vector<std::future<Result<std::pair<nlohmann::json, double>>>> clients;
  clients.reserve(3);
  for (int i = 0; i < 3; ++i) {
    clients.push_back(
        std::async(std::launch::async, [&h, i]() -> Result<std::pair<nlohmann::json, double>> {
          auto client = TestClient::connect(h.socket);
          if (!client) return fail(std::move(client).error());
          if (auto hello = client->try_hello(); !hello) return fail(std::move(hello).error());
          const auto begin = Clock::now();
          auto reply = client->try_call(fetch_request(kKernelRepo, static_cast<std::uint64_t>(i)));
          if (!reply) return fail(std::move(reply).error());
          return std::pair{reply->frame,
                           std::chrono::duration<double>(Clock::now() - begin).count()};
        }));
  }
  for (auto& c : clients) {
    auto got = c.get();
    INFO((got ? got->first.dump() : got.error().message));
    REQUIRE(got);
    CHECK(got->first.at("type") == "error");
    CHECK(got->first.at("code") == "timeout");
    CHECK_THAT(got->first.at("message").get<std::string>(),
               Catch::Contains("KERNELHUB_MIN_BYTES_PER_SECOND") ||
                   Catch::Contains("KERNELHUB_API_DEADLINE"));
    CHECK(got->second < 5.0);  // the 2 s deadline plus slack: no hang
  }
  CHECK(std::chrono::duration<double>(Clock::now() - start).count() < 6.0);
  CHECK(h.fx.server->paced_bytes() >= 1);          // the trickle ran
  CHECK(h.fx.server->count("GET", "/api/") <= 2);  // one flight for the three clients

  // The upstream recovers: the next client is served.
  h.fx.server->set_faults({});
  TestClient next(h.socket);
  next.hello();
  auto reply = next.call(fetch_request(kKernelRepo, 9));
  INFO(reply.frame.dump());
  CHECK(reply.frame.at("type") == "fetched");
}
