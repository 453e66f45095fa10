// kernel-status.toml redirects (security matrix S15): a redirect names another publisher, so
// the trust decision is taken again for the destination before anything is downloaded.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "hub/fetch_fixture.hpp"
#include "kernelhub/hub/kernel_status.hpp"
#include "kernelhub/hub/server/store_publisher.hpp"

namespace fs = std::filesystem;
using namespace kernelhub;
using namespace kernelhub::testing;

namespace {

// Publishes `org/moved` on v1 holding only a kernel-status.toml that points at `destination`.
void publish_redirect(const FetchFixture& fx, const std::string& org,
                      const std::string& destination, const std::string& revision) {
  const fs::path source = fx.tmp.path() / ("redirect-" + org);
  fs::create_directories(source);
  std::ofstream(source / "kernel-status.toml")
      << "kind = \"redirect\"\ndestination = \"" << destination << "\"\nrevision = \"" << revision
      << "\"\n";
  hub::server::PublishRequest request;
  request.root = fx.store;
  request.repo = trust::RepoId{org, "moved"};
  request.branch = "v1";
  request.source = source;
  REQUIRE(hub::server::publish_directory(request));
}

// A copy of the fixture kernel under another publisher, so the redirect crosses orgs.
void publish_untrusted_copy(const FetchFixture& fx) {
  const fs::path source = fx.tmp.path() / "untrusted-src";
  write_variant(source / "build" / kCpuVariant, cpu_variant_files());
  hub::server::PublishRequest request;
  request.root = fx.store;
  request.repo = trust::RepoId{"SageAttention", "demo-fetch"};
  request.branch = "v1";
  request.source = source;
  REQUIRE(hub::server::publish_directory(request));
}

fetch::Request moved_request(const std::string& org) {
  auto request = FetchFixture::request();
  request.repo = trust::RepoId{org, "moved"};
  return request;
}

}  // namespace

TEST_CASE("kernel-status.toml is parsed strictly", "[hub][redirect]") {
  auto redirect = hub::parse_kernel_status("kind = \"redirect\"\ndestination = \"org/name\"\n");
  REQUIRE(redirect);
  REQUIRE(*redirect);
  CHECK((*redirect)->destination.str() == "org/name");
  CHECK((*redirect)->revision == "main");
  CHECK_FALSE(hub::parse_kernel_status("kind = \"retired\"\n"));
  CHECK_FALSE(hub::parse_kernel_status("destination = \"org/name\"\n"));
  CHECK_FALSE(hub::parse_kernel_status("kind = \"redirect\"\ndestination = \"../etc\"\n"));
  CHECK_FALSE(hub::parse_kernel_status("kind = = \n"));
}

TEST_CASE("a redirect to a trusted repo is followed", "[hub][redirect]") {
  FetchFixture fx;
  publish_redirect(fx, "kernels-community", "kernels-community/demo-fetch", "v1");
  auto result = fx.fetch(moved_request("kernels-community"), fx.config());
  INFO((result ? "" : result.error().message));
  REQUIRE(result);
  CHECK(result->manifest.repo.str() == "kernels-community/demo-fetch");
  CHECK(result->manifest.commit == fx.commit);
  CHECK(fs::exists(result->manifest.snapshot_path / "build" / kCpuVariant / kSoName));
}

TEST_CASE("a trusted repo that redirects to an untrusted publisher is refused before any download",
          "[hub][redirect][trust]") {
  FetchFixture fx;
  publish_untrusted_copy(fx);
  publish_redirect(fx, "kernels-community", "SageAttention/demo-fetch", "v1");
  fx.server->reset_requests();

  auto refused = fx.fetch(moved_request("kernels-community"), fx.config());
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::untrusted_publisher);
  CHECK(refused.error().message.find("SageAttention") != std::string::npos);
  CHECK(refused.error().message.find("DIFFUSERS_TRUST_REMOTE_KERNELS") != std::string::npos);
  CHECK(fx.server->count("", "SageAttention") == 0);  // nothing was asked of the destination
  CHECK(fx.file_gets() == 0);                         // no artifact byte
  CHECK(fx.server->count("GET", "kernel-status.toml") == 1);

  trust::TrustEnvironment opted_in;
  opted_in.trust_remote_kernels = true;
  auto allowed = fx.fetch(moved_request("kernels-community"), fx.config(), opted_in);
  INFO((allowed ? "" : allowed.error().message));
  REQUIRE(allowed);
  CHECK(allowed->manifest.repo.str() == "SageAttention/demo-fetch");
}

TEST_CASE("a redirect loop ends in a typed error", "[hub][redirect]") {
  FetchFixture fx;
  publish_redirect(fx, "kernels-community", "kernels-community/moved", "v1");
  auto looped = fx.fetch(moved_request("kernels-community"), fx.config());
  REQUIRE_FALSE(looped);
  CHECK(looped.error().code == ErrorCode::malformed_response);
}

TEST_CASE("a missing kernel-status.toml is remembered and not asked for again", "[hub][redirect]") {
  FetchFixture fx;
  REQUIRE(fx.fetch());
  CHECK(fs::exists(fx.cache_root / "kernels--kernels-community--demo-fetch" / ".no_exist" /
                   fx.commit / "kernel-status.toml"));
  fx.server->reset_requests();
  REQUIRE(fx.fetch());
  CHECK(fx.server->count("GET", "kernel-status.toml") == 0);
}
