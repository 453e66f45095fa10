#include <catch2/catch.hpp>

#include <chrono>

#include "kernelhub/trust/digest.hpp"
#include "server/store_fixture.hpp"

using namespace kernelhub;
using kernelhub::testing::FaultPlan;
using kernelhub::testing::ServerFixture;

namespace {
const std::string kResolve = "/kernels/kernels-community/demo-kernel/resolve/main/";

// Follows the LFS redirect by hand so each fault hits the object URL.
std::string lfs_url(ServerFixture& fx, const std::string& file) {
  auto c = fx.client();
  auto head = c.Head((kResolve + file).c_str());
  REQUIRE(head);
  REQUIRE(head->status == 302);
  return head->get_header_value("Location").substr(("http://" + fx.host()).size());
}

struct Download {
  bool complete = false;
  int status = 0;
  std::string body;
};

Download download(ServerFixture& fx, const std::string& path,
                  const httplib::Headers& headers = {}) {
  auto c = fx.client();
  Download d;
  auto res = c.Get(path.c_str(), headers, [&](const char* data, std::size_t n) {
    d.body.append(data, n);
    return true;
  });
  d.complete = static_cast<bool>(res);
  if (res) d.status = res->status;
  return d;
}
}  // namespace

TEST_CASE("reset fault drops the connection mid-body, reset_times times", "[server][faults]") {
  ServerFixture fx;
  const std::string bytes = testing::slurp(fx.source / "build/torch-cpu/weights.dat");
  const std::string url = lfs_url(fx, "build/torch-cpu/weights.dat");
  FaultPlan plan;
  plan.reset_after_bytes = 100000;
  plan.reset_times = 1;
  fx.server->set_faults(plan);
  const auto first = download(fx, url);
  CHECK_FALSE(first.complete);
  CHECK(first.body.size() == 100000);  // fewer bytes than the Content-Length promised
  CHECK(first.body == bytes.substr(0, 100000));
  const auto second = download(fx, url);
  CHECK(second.complete);
  CHECK(second.body == bytes);
}

TEST_CASE("corrupt fault flips one byte and keeps the length", "[server][faults]") {
  ServerFixture fx;
  const std::string bytes = testing::slurp(fx.source / "build/torch-cpu/demo/__init__.py");
  FaultPlan plan;
  plan.corrupt_one_byte = true;
  fx.server->set_faults(plan);
  const auto d = download(fx, kResolve + "build/torch-cpu/demo/__init__.py");
  REQUIRE(d.complete);
  CHECK(d.body.size() == bytes.size());
  CHECK(trust::sha256_hex(d.body) != trust::sha256_hex(bytes));
  std::size_t differing = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) differing += d.body[i] != bytes[i] ? 1 : 0;
  CHECK(differing == 1);
}

TEST_CASE("fail_status answers 429 with Retry-After and RateLimit, then recovers",
          "[server][faults]") {
  ServerFixture fx;
  FaultPlan plan;
  plan.fail_status = 429;
  plan.fail_count = 2;
  plan.retry_after_seconds = 3;
  fx.server->set_faults(plan);
  auto c = fx.client();
  for (int i = 0; i < 2; ++i) {
    auto res = c.Get("/api/kernels/kernels-community/demo-kernel/refs");
    REQUIRE(res);
    CHECK(res->status == 429);
    CHECK(res->get_header_value("Retry-After") == "3");
    CHECK(res->get_header_value("RateLimit") == "\"api\";r=0;t=3");
  }
  auto ok = c.Get("/api/kernels/kernels-community/demo-kernel/refs");
  REQUIRE(ok);
  CHECK(ok->status == 200);
  CHECK(fx.server->count("GET", "/refs") == 3);
}

TEST_CASE("ignore_range answers a Range request with 200 and the full body", "[server][faults]") {
  ServerFixture fx;
  const std::string bytes = testing::slurp(fx.source / "build/torch-cpu/weights.dat");
  const std::string url = lfs_url(fx, "build/torch-cpu/weights.dat");
  FaultPlan plan;
  plan.ignore_range = true;
  fx.server->set_faults(plan);
  const auto d = download(fx, url, {{"Range", "bytes=1000-"}});
  REQUIRE(d.complete);
  CHECK(d.status == 200);
  CHECK(d.body == bytes);
}

TEST_CASE("stall fault delays the body after the headers", "[server][faults]") {
  ServerFixture fx;
  FaultPlan plan;
  plan.stall = std::chrono::milliseconds(600);
  fx.server->set_faults(plan);
  const auto start = std::chrono::steady_clock::now();
  const auto d = download(fx, kResolve + "README.md");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE(d.complete);
  CHECK(d.body == "# demo kernel\n");
  CHECK(elapsed >= std::chrono::milliseconds(550));
}

TEST_CASE("path_filter limits download faults to matching files", "[server][faults]") {
  ServerFixture fx;
  FaultPlan plan;
  plan.corrupt_one_byte = true;
  plan.path_filter = "__init__.py";
  fx.server->set_faults(plan);
  CHECK(download(fx, kResolve + "README.md").body == "# demo kernel\n");
  const std::string py = testing::slurp(fx.source / "build/torch-cpu/demo/__init__.py");
  CHECK(download(fx, kResolve + "build/torch-cpu/demo/__init__.py").body != py);
}
