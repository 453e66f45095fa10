// CurlHttpClient against hand-written servers: body caps, redirect handling and where the
// Authorization header may go.
#include <catch2/catch.hpp>

#include <mutex>

#include "hub/local_http_server.hpp"
#include "kernelhub/hub/http.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

TEST_CASE("API bodies over the cap fail with too_large, at the cap they pass") {
  LocalHttpServer http;
  http.server.Get("/api/big", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(2000, 'x'), "application/json");
  });
  http.start();
  hub::HubConfig config;
  config.endpoint = http.endpoint();
  hub::CurlHttpClient client(config);
  hub::HttpRequest request;
  request.url = http.endpoint() + "/api/big";
  request.max_body = 1999;
  auto over = client.send(request);
  REQUIRE_FALSE(over);
  CHECK(over.error().code == ErrorCode::too_large);
  request.max_body = 2000;
  auto at = client.send(request);
  REQUIRE(at);
  CHECK(at->body.size() == 2000);
}

TEST_CASE("Authorization goes to the endpoint but never follows a redirect to another origin") {
  LocalHttpServer storage;
  std::mutex mutex;
  std::string storage_auth = "unset";
  storage.server.Get("/object", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mutex);
    storage_auth = req.get_header_value("Authorization");
    res.set_content("bytes", "application/octet-stream");
  });
  storage.start();
  LocalHttpServer hub_server;
  std::string hub_auth;
  hub_server.server.Get("/file", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mutex);
    hub_auth = req.get_header_value("Authorization");
    res.status = 302;
    res.set_header("Location", storage.endpoint() + "/object");
  });
  hub_server.start();

  hub::HubConfig config;
  config.endpoint = hub_server.endpoint();
  config.token = "hf_secret";
  hub::CurlHttpClient client(config);
  hub::HttpRequest request;
  request.url = hub_server.endpoint() + "/file";

  auto unfollowed = client.send(request);
  REQUIRE(unfollowed);
  CHECK(unfollowed->status == 302);
  CHECK(unfollowed->header("location") == storage.endpoint() + "/object");
  CHECK(storage_auth == "unset");

  request.follow_redirects = true;
  auto followed = client.send(request);
  REQUIRE(followed);
  CHECK(followed->status == 200);
  CHECK(followed->body == "bytes");
  std::lock_guard lock(mutex);
  CHECK(hub_auth == "Bearer hf_secret");
  CHECK(storage_auth.empty());
}

TEST_CASE("the token is not sent to URLs outside the configured endpoint") {
  LocalHttpServer other;
  std::string auth = "unset";
  other.server.Get("/x", [&](const httplib::Request& req, httplib::Response& res) {
    auth = req.get_header_value("Authorization");
    res.set_content("{}", "application/json");
  });
  other.start();
  hub::HubConfig config;
  config.endpoint = "http://127.0.0.1:1";
  config.token = "hf_secret";
  hub::CurlHttpClient client(config);
  hub::HttpRequest request;
  request.url = other.endpoint() + "/x";
  REQUIRE(client.send(request));
  CHECK(auth.empty());
}

TEST_CASE("a stalled API response times out after the etag timeout") {
  LocalHttpServer http;
  http.server.Get("/api/slow", [](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    res.set_content("{}", "application/json");
  });
  http.start();
  hub::HubConfig config;
  config.endpoint = http.endpoint();
  config.etag_timeout = std::chrono::milliseconds(200);
  config.retry_base = std::chrono::milliseconds(1);
  config.max_retries = 0;
  hub::CurlHttpClient client(config);
  hub::HttpRequest request;
  request.url = http.endpoint() + "/api/slow";
  const auto start = std::chrono::steady_clock::now();
  auto result = client.send(request);
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::timeout);
  // curl calls the progress callback that sees the stall about once a second while nothing
  // moves: the 200 ms timeout trips within ~1.2 s, far before the 2.5 s reply.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2000));
}
