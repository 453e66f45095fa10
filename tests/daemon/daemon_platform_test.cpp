// kernelhubd selects the variant for the platform its client sent, never for its own
// environment: this daemon runs with KERNELHUB_TORCH_VERSION/KERNELHUB_BACKEND of its own.
#include <catch2/catch.hpp>

#include "daemon/daemon_harness.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;
using nlohmann::json;

namespace {

json platform_request(std::uint64_t id, const json& platform) {
  json request = fetch_request(kKernelRepo, id);
  for (const char* key : {"torch_version", "backend"}) request.erase(key);
  for (const auto& [key, value] : platform.items()) request[key] = value;
  return request;
}

}  // namespace

TEST_CASE("the client's platform picks the variant, the daemon's environment never does",
          "[daemon][platform]") {
  // Were the daemon to select for itself, every request below would get the CUDA build.
  DaemonHarness h(std::nullopt,
                  {{"KERNELHUB_TORCH_VERSION", "2.15.0+cu130"}, {"KERNELHUB_BACKEND", "cu130"}});
  TestClient client(h.socket);
  client.hello();

  SECTION("no torch and no backend (an older client without flags): refused, not guessed") {
    const auto refused = client.call(platform_request(1, json::object()));
    CHECK(refused.frame.at("type") == "error");
    CHECK(refused.frame.at("code") == "invalid_request");
    CHECK_THAT(refused.frame.at("message").get<std::string>(),
               Catch::Contains("--torch-version") && Catch::Contains("own torch"));
    // The connection stays usable, and naming the variant needs no platform.
    auto named = fetch_request(kKernelRepo, 2);
    named.erase("torch_version");
    named.erase("backend");
    named["variant"] = kCpuVariant;
    const auto served = client.call(named);
    REQUIRE(served.frame.at("type") == "fetched");
    CHECK(served.frame.at("variants") == json::array({kCpuVariant}));
  }
  SECTION("an older client's --torch-version/--backend: this host's arch and OS") {
    const auto served =
        client.call(platform_request(3, {{"torch_version", "2.15"}, {"backend", "cpu"}}));
    REQUIRE(served.frame.at("type") == "fetched");
    CHECK(served.frame.at("variants") == json::array({kCpuVariant}));
  }
  SECTION("every member the client sent counts, arch included") {
    const json cpu{{"torch_version", "2.15"},
                   {"backend", "cpu"},
                   {"cxx11_abi", true},
                   {"arch", "x86_64"},
                   {"os", "linux"}};
    const auto served = client.call(platform_request(4, cpu));
    REQUIRE(served.frame.at("type") == "fetched");
    CHECK(served.frame.at("variants") == json::array({kCpuVariant}));

    json arm = cpu;
    arm["arch"] = "aarch64";
    const auto none = client.call(platform_request(5, arm));
    CHECK(none.frame.at("code") == "no_matching_variant");
    CHECK_THAT(none.frame.at("message").get<std::string>(), Catch::Contains("aarch64"));

    json older_torch = cpu;
    older_torch["torch_version"] = "2.13";
    const auto none2 = client.call(platform_request(6, older_torch));
    CHECK(none2.frame.at("code") == "no_matching_variant");
  }
}
