// parse_message is strict: wrong types and missing members are invalid_request, an unknown
// `type` is unknown_request, and each error names the member (and the request id if any).
#include <set>

#include <catch2/catch.hpp>

#include "kernelhub/proto/messages.hpp"
#include "proto/proto_test_support.hpp"

using namespace kernelhub;
using namespace kernelhub::proto;
using kernelhub::proto::testing::load_golden;
using nlohmann::json;

namespace {

Error parse_error(const json& frame, Sender sender) {
  auto parsed = parse_message(frame, sender);
  REQUIRE_FALSE(parsed);
  return parsed.error();
}

bool mentions(const Error& e, const std::string& text) {
  return e.message.find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("wrong member types are invalid_request naming the member and the id",
          "[proto][strict]") {
  struct Case {
    const char* golden;
    Sender sender;
    const char* member;
    json value;
  };
  const Case cases[] = {
      {"fetch", Sender::client, "repo", 42},
      {"fetch", Sender::client, "version", -1},
      {"fetch", Sender::client, "version", "1"},
      {"fetch", Sender::client, "all_variants", "yes"},
      {"fetch", Sender::client, "env", json::array({"HF_HUB_OFFLINE"})},
      {"fetch", Sender::client, "env", json{{"HF_HUB_OFFLINE", 1}}},
      {"fetch", Sender::client, "torch_version", 2.15},
      {"fetch", Sender::client, "torch_version", std::string(65, '2')},
      {"fetch", Sender::client, "backend", ""},
      {"fetch", Sender::client, "backend", "cpu\n"},
      {"fetch", Sender::client, "arch", "x86_64; rm -rf"},
      {"fetch", Sender::client, "os", 1},
      {"fetch", Sender::client, "cxx11_abi", "yes"},
      {"hello_client", Sender::client, "capabilities", "fds"},
      {"hello_client", Sender::client, "capabilities", json::array({"fds", 1})},
      {"hello_client", Sender::client, "protocol", 1.5},
      {"progress", Sender::daemon, "bytes_done", -5},
      {"fetched", Sender::daemon, "files", json::object()},
      {"fetched", Sender::daemon, "files",
       json::array({json{{"path", "a"}, {"size", 1}, {"sha256", "x"}, {"fd", 250}}})},
      {"fetched", Sender::daemon, "from_cache", 1},
      {"status_reply", Sender::daemon, "counters", json{{"requests", "many"}}},
      {"status_reply", Sender::daemon, "uptime_s", "12"},
      {"ls_reply", Sender::daemon, "repos", json::object()},
      {"verified", Sender::daemon, "corrupt", json::array({1})},
      {"verify_request", Sender::client, "repo", false},
      {"gc_reply", Sender::daemon, "freed_bytes", nullptr},
      {"error", Sender::daemon, "code", 3},
      {"fetch_locked", Sender::client, "locked", json::array()},
      {"fetch_locked", Sender::client, "locked", json::object({{"v", 1}})},
      {"fetched", Sender::daemon, "refused_move", 7},
      // A manifest is built here: a repo id, notes that are absent or say something, and
      // files[i]'s descriptor is fd i, on every file or on none.
      {"fetched", Sender::daemon, "repo", "relu"},
      {"fetched", Sender::daemon, "cache_fallback", ""},
      {"fetched", Sender::daemon, "files",
       json::array({json{{"path", "a"}, {"size", 1}, {"sha256", "x"}, {"fd", 1}}})},
      {"fetched", Sender::daemon, "files",
       json::array({json{{"path", "a"}, {"size", 1}, {"sha256", "x"}, {"fd", 0}},
                    json{{"path", "b"}, {"size", 1}, {"sha256", "x"}}})},
      {"fetched", Sender::daemon, "files",
       json::array({json{{"path", "a"}, {"size", 1}, {"sha256", "x"}},
                    json{{"path", "b"}, {"size", 1}, {"sha256", "x"}, {"fd", 1}}})},
  };
  for (const auto& c : cases) {
    auto frame = load_golden(c.golden);
    frame[c.member] = c.value;
    INFO(frame.dump());
    auto e = parse_error(frame, c.sender);
    CHECK(e.code == ErrorCode::invalid_request);
    CHECK(mentions(e, frame["type"].get<std::string>()));
    CHECK(mentions(e, c.member));
    if (frame.contains("id"))
      CHECK(mentions(e, "(id " + std::to_string(frame["id"].get<std::uint64_t>()) + ")"));
  }
}

TEST_CASE("missing required members are invalid_request", "[proto][strict]") {
  const std::pair<const char*, Sender> goldens[] = {
      {"hello_client", Sender::client}, {"fetch", Sender::client},
      {"fetch_locked", Sender::client}, {"import", Sender::client},
      {"imported", Sender::daemon},     {"progress", Sender::daemon},
      {"fetched", Sender::daemon},      {"status_request", Sender::client},
      {"status_reply", Sender::daemon}, {"ls_reply", Sender::daemon},
      {"verified", Sender::daemon},     {"gc_reply", Sender::daemon},
      {"pin_request", Sender::client},  {"pins", Sender::daemon},
      {"error", Sender::daemon}};
  const std::set<std::string> optional_members = {
      "type", "client", "daemon", "variant", "all_variants", "torch_version", "backend", "env",
      "revision", "cxx11_abi", "arch", "os", "cache_fallback", "refused_move", "locked",
      "signature_warnings", "receipts_checked", "receipts_changed",
      // gc replies of daemons before eviction
      "evicted", "cache_bytes", "pinned_bytes", "free_bytes", "skipped", "within_bounds", "dry_run",
      // pin: what `add` needs is checked apart
      "variants", "source", "removed"};
  int checked = 0;
  for (const auto& [name, sender] : goldens) {
    const auto golden = load_golden(name);
    for (const auto& [member, value] : golden.items()) {
      if (optional_members.count(member) || (std::string(name) == "error" && member == "id"))
        continue;
      auto frame = golden;
      frame.erase(member);
      INFO(name << " without " << member);
      auto e = parse_error(frame, sender);
      CHECK(e.code == ErrorCode::invalid_request);
      CHECK(mentions(e, member));
      ++checked;
    }
  }
  CHECK(checked > 30);
}

TEST_CASE("fetch needs exactly one of version and revision", "[proto][strict]") {
  auto both = load_golden("fetch");
  both["revision"] = "main";
  CHECK(parse_error(both, Sender::client).code == ErrorCode::invalid_request);
  auto neither = load_golden("fetch");
  neither.erase("version");
  CHECK(parse_error(neither, Sender::client).code == ErrorCode::invalid_request);
  auto null_version = load_golden("prefetch");
  null_version["version"] = nullptr;
  CHECK(parse_message(null_version, Sender::client));
}

TEST_CASE("unknown types are unknown_request and keep the id", "[proto][strict]") {
  auto e = parse_error(json{{"type", "launch_missiles"}, {"id", 99}}, Sender::client);
  CHECK(e.code == ErrorCode::unknown_request);
  CHECK(mentions(e, "launch_missiles"));
  CHECK(mentions(e, "(id 99)"));
  CHECK(request_id_of(json{{"type", "launch_missiles"}, {"id", 99}}) == RequestId{99});
  CHECK_FALSE(request_id_of(json{{"type", "x"}, {"id", "99"}}).has_value());
  CHECK_FALSE(request_id_of(json{{"type", "x"}, {"id", -1}}).has_value());
  // Replies are not requests: a client cannot send `fetched` or `error` to the daemon.
  CHECK(parse_error(load_golden("fetched"), Sender::client).code == ErrorCode::unknown_request);
  CHECK(parse_error(load_golden("error"), Sender::client).code == ErrorCode::unknown_request);
  // Nor can a daemon send requests.
  CHECK(parse_error(load_golden("fetch"), Sender::daemon).code == ErrorCode::unknown_request);
  CHECK(parse_error(load_golden("verify_request"), Sender::daemon).code ==
        ErrorCode::unknown_request);
}

TEST_CASE("frames without an object and a string type are malformed_frame", "[proto][strict]") {
  for (const json& frame :
       {json::array(), json(3), json{{"id", 1}}, json{{"type", 1}}, json{{"type", nullptr}}}) {
    INFO(frame.dump());
    CHECK(parse_error(frame, Sender::client).code == ErrorCode::malformed_frame);
    CHECK_FALSE(parse_message(frame));
  }
}

TEST_CASE("unknown extra members are ignored for forward compatibility", "[proto][strict]") {
  auto frame = load_golden("status_request");
  frame["future_member"] = json{{"a", 1}};
  auto parsed = parse_message(frame, Sender::client);
  REQUIRE(parsed);
  CHECK(std::get<StatusRequest>(*parsed).id == 2);
}

TEST_CASE("status counters: the metrics members are bounded and optional", "[proto][strict]") {
  const auto with_counter = [](const char* key, json value) {
    auto frame = load_golden("status_reply");
    frame["counters"][key] = std::move(value);
    return frame;
  };
  const std::vector<std::pair<const char*, json>> bad = {
      {"errors_by_class", json::array()},
      {"errors_by_class", json{{"Repo Not Found", 1}}},
      {"errors_by_class", json{{"x\"}", 1}}},
      {"errors_by_class", json{{"repo_not_found", -1}}},
      {"flight_seconds_buckets", json::array({1, 2, 3})},
      {"flight_seconds_buckets", json(std::vector<int>(14, 1))},
      {"flight_seconds_sum", -1},
      {"flights", "3"},
  };
  for (const auto& [key, value] : bad) {
    const auto frame = with_counter(key, value);
    INFO(frame.dump());
    const auto e = parse_error(frame, Sender::daemon);
    CHECK(e.code == ErrorCode::invalid_request);
    CHECK(mentions(e, key));
  }
  json many = json::object();
  for (int i = 0; i < 129; ++i)
    many["code_" + std::string(1, static_cast<char>('a' + i % 26)) +
         std::string(static_cast<std::size_t>(i / 26) + 1, 'x')] = 1;
  CHECK(parse_error(with_counter("errors_by_class", many), Sender::daemon).code ==
        ErrorCode::invalid_request);

  // A daemon from before the metrics sends none of them: zero and empty.
  auto older = load_golden("status_reply");
  for (const char* key : {"trust_refused", "http_requests", "flights", "flights_active",
                          "errors_by_class", "flight_seconds_buckets", "flight_seconds_sum"})
    older["counters"].erase(key);
  auto parsed = kernelhub::proto::parse_message(older, Sender::daemon);
  REQUIRE(parsed);
  const auto& counters = std::get<kernelhub::proto::StatusReply>(*parsed).counters;
  CHECK(counters.flights == 0);
  CHECK(counters.errors_by_class.empty());
  CHECK(counters.flight_seconds_buckets.empty());
  CHECK(counters.requests == 10);
}

TEST_CASE("gc and pin: bounds checked, older replies read, pin requests complete",
          "[proto][strict][eviction]") {
  // A daemon before eviction answers gc with three members: read with the defaults.
  const auto old = parse_message(json{{"type", "gc"},
                                      {"id", 5},
                                      {"removed_snapshots", 1},
                                      {"removed_blobs", 2},
                                      {"freed_bytes", 3}},
                                 Sender::daemon);
  REQUIRE(old);
  const auto& reply = std::get<GcReply>(*old);
  CHECK(reply.freed_bytes == 3);
  CHECK(reply.evicted.empty());
  CHECK(reply.within_bounds);
  // A plain gc request (older clients) has no bounds.
  const auto plain = parse_message(json{{"type", "gc"}, {"id", 1}}, Sender::client);
  REQUIRE(plain);
  CHECK_FALSE(std::get<GcRequest>(*plain).has_bounds());

  for (const json& bad : {json{{"type", "gc"}, {"id", 1}, {"min_free_percent", 100}},
                          json{{"type", "gc"}, {"id", 1}, {"min_free_percent", -1}},
                          json{{"type", "gc"}, {"id", 1}, {"max_size", -5}},
                          json{{"type", "gc"}, {"id", 1}, {"dry_run", "yes"}},
                          json{{"type", "pin"}, {"id", 1}, {"action", "steal"}},
                          json{{"type", "pin"}, {"id", 1}, {"action", "add"}, {"repo", "a/b"}},
                          json{{"type", "pin"}, {"id", 1}, {"action", "remove"}},
                          json{{"type", "pin"},
                               {"id", 1},
                               {"action", "add"},
                               {"repo", "a/b"},
                               {"revision", "v1"},
                               {"variants", json(std::vector<std::string>(300, "v"))}}}) {
    INFO(bad.dump().substr(0, 200));
    const auto e = parse_error(bad, Sender::client);
    CHECK(e.code == ErrorCode::invalid_request);
  }
  CHECK(parse_message(json{{"type", "pin"}, {"id", 1}, {"action", "list"}}, Sender::client));
  // `pins` is a reply: a client may not send it.
  CHECK(parse_error(json{{"type", "pins"}, {"id", 1}, {"repos", json::array()}}, Sender::client)
            .code == ErrorCode::unknown_request);
}
