// Golden files: one per message type, written by hand from docs/protocol.md. Each must parse
// to the typed value below, and that value must serialise back to exactly the golden JSON.
#include <catch2/catch.hpp>

#include "kernelhub/proto/messages.hpp"
#include "proto/proto_test_support.hpp"

using namespace kernelhub;
using namespace kernelhub::proto;
using kernelhub::proto::testing::load_golden;

namespace {

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";
const std::string kSha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const std::string kEmptySha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const std::string kVariant = "torch215-cxx11-cpu-x86_64-linux";

struct GoldenCase {
  std::string name;
  Sender sender;
  Message typed;
};

std::vector<GoldenCase> golden_cases() {
  FetchRequest fetch;
  fetch.id = 7;
  fetch.repo = "kernels-community/relu";
  fetch.version = 1;
  fetch.torch_version = "2.15";
  fetch.backend = "cpu";
  fetch.cxx11_abi = true;
  fetch.arch = "x86_64";
  fetch.os = "linux";
  fetch.env = {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"},
               {"DIFFUSERS_DISABLE_REMOTE_CODE", ""},
               {"HF_HUB_OFFLINE", ""}};

  // A client from before the platform fields: every platform member is unknown.
  FetchRequest older;
  older.id = 9;
  older.repo = "kernels-community/relu";
  older.version = 1;

  FetchRequest prefetch;
  prefetch.prefetch = true;
  prefetch.id = 8;
  prefetch.repo = "kernels-community/activation";
  prefetch.revision = "main";
  prefetch.variant = kVariant;

  // A kernels.lock entry: the locked commit as the revision, a legacy variant hash.
  FetchRequest locked;
  locked.id = 11;
  locked.repo = "kernels-community/relu";
  locked.revision = kCommit;
  locked.torch_version = "2.15";
  locked.backend = "cpu";
  locked.locked = std::map<std::string, std::string>{{kVariant, "sha256-" + kSha}};

  Fetched fetched{7,
                  {trust::RepoId{"kernels-community", "relu"},
                   kCommit,
                   {kVariant},
                   "/var/cache/kernelhub/kernels--kernels-community--relu/snapshots/" + kCommit,
                   {{"build/" + kVariant + "/_relu.abi3.so", 104857600, kSha, ""},
                    {"build/" + kVariant + "/__init__.py", 0, kEmptySha, ""}},
                   true,
                   "http_status: HTTP 503 from the Hub",
                   "kernels-community/relu v1 moved to " + kCommit + ", which does not descend",
                   {"unverified signature: kernels-community/relu build/" + kVariant +
                    ": signature: the variant has no metadata.json.sigstore (served: [signatures] "
                    "mode is warn)"}},
                  /*with_fds=*/true};

  LsReply ls{
      3, nlohmann::json::array({{{"repo", "kernels-community/relu"},
                                 {"path", "/var/cache/kernelhub/kernels--kernels-community--relu"},
                                 {"size_bytes", 104857600},
                                 {"revisions",
                                  {{{"commit", kCommit},
                                    {"refs", {"v1"}},
                                    {"variants", {kVariant}},
                                    {"size_bytes", 104857600}}}}}})};

  return {
      {"hello_client", Sender::client,
       Hello{1, {"fds", "progress"}, "kernelhub/0.1.0", std::nullopt}},
      {"hello_daemon", Sender::daemon,
       Hello{1, {"fds", "progress"}, std::nullopt, "kernelhubd/0.1.0"}},
      {"fetch", Sender::client, fetch},
      {"fetch_older_client", Sender::client, older},
      {"fetch_locked", Sender::client, locked},
      {"prefetch", Sender::client, prefetch},
      {"progress", Sender::daemon,
       Progress{7, "build/" + kVariant + "/_relu.abi3.so", 1048576, 104857600, 1, 4}},
      {"fetched", Sender::daemon, fetched},
      {"status_request", Sender::client, StatusRequest{2}},
      {"status_reply", Sender::daemon,
       StatusReply{2, "kernelhubd/0.1.0", 4242, 12.5, "/var/cache/kernelhub", 1,
                   Counters{10,
                            7,
                            3,
                            104857600,
                            9,
                            1,
                            4,
                            1,
                            2,
                            5,
                            6,
                            8,
                            11,
                            3,
                            1,
                            {{"repo_not_found", 1}},
                            {0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0},
                            1.75,
                            2,
                            4096,
                            1000000,
                            2000000,
                            500000}}},
      {"ls_request", Sender::client, LsRequest{3}},
      {"ls_reply", Sender::daemon, ls},
      {"verify_request", Sender::client, VerifyRequest{4, "kernels-community/relu"}},
      {"verified", Sender::daemon,
       VerifyReply{4,
                   12,
                   {{"kernels-community/relu", kSha, "sha256 mismatch"}},
                   3,
                   {"kernels-community/relu@" + kCommit + " build/" + kVariant +
                    ": verified (https://github.com/huggingface/kernels-community/.github/"
                    "workflows/build.yaml@refs/heads/main) -> unsigned"}}},
      {"gc_request", Sender::client, GcRequest{5, 1073741824, std::nullopt, 10.5, 2592000, true}},
      {"gc_reply", Sender::daemon,
       GcReply{5,
               1,
               3,
               2048,
               nlohmann::json::array({{{"repo", "kernels-community/relu"},
                                       {"commit", kCommit},
                                       {"variant", kVariant},
                                       {"size_bytes", 2048},
                                       {"last_used", 1800000000},
                                       {"reason", "cache over max_size (4096 > 3000 bytes)"}}}),
               4096,
               1024,
               1000000,
               {"SageAttention/relu (a fetch is using it)"},
               true,
               false}},
      {"pin_request", Sender::client,
       PinRequest{13, "add", "kernels-community/relu", "v1", {kVariant}, "revision v1"}},
      {"pins", Sender::daemon,
       PinReply{13,
                nlohmann::json::array({{{"repo", "kernels-community/relu"},
                                        {"pins",
                                         {{{"commit", kCommit},
                                           {"variants", {kVariant}},
                                           {"source", "revision v1"},
                                           {"pinned_by", "uid 0"},
                                           {"pinned_at", 1800000000},
                                           {"size_bytes", 2048},
                                           {"cached", true}}}}}}),
                0}},
      {"import", Sender::client,
       ImportRequest{12,
                     0,
                     {{"DIFFUSERS_TRUST_REMOTE_KERNELS", ""},
                      {"DIFFUSERS_DISABLE_REMOTE_CODE", ""},
                      {"HF_HUB_OFFLINE", ""}}}},
      {"imported", Sender::daemon,
       ImportReply{12, nlohmann::json::array(
                           {{{"repo", "kernels-community/relu"},
                             {"commit", kCommit},
                             {"variants", {kVariant}},
                             {"files", 4},
                             {"refs_written", {"v1"}},
                             {"refs_kept", nlohmann::json::array()},
                             {"snapshot",
                              "/var/cache/kernelhub/kernels--kernels-community--relu/snapshots/" +
                                  kCommit}}})}},
      {"error", Sender::daemon,
       ErrorReply{7, "untrusted_publisher",
                  "publisher 'SageAttention' is not trusted: not in the admin allow-list"}},
      {"error_no_id", Sender::daemon,
       ErrorReply{std::nullopt, "malformed_frame", "frame payload is not valid JSON"}},
  };
}

}  // namespace

TEST_CASE("every golden frame parses to its typed message and serialises back exactly",
          "[proto][golden]") {
  for (const auto& c : golden_cases()) {
    INFO("golden " << c.name);
    const auto golden = load_golden(c.name);
    auto parsed = parse_message(golden, c.sender);
    REQUIRE(parsed);
    CHECK(*parsed == c.typed);
    CHECK(to_json(*parsed) == golden);
    CHECK(to_json(c.typed) == golden);
    CHECK(type_name(c.typed) == golden["type"].get<std::string>());
    // The direction-free parse must pick the same message.
    auto guessed = parse_message(golden);
    REQUIRE(guessed);
    CHECK(*guessed == c.typed);
    // And the bytes survive a frame round trip.
    FrameDecoder decoder;
    decoder.feed(*encode_frame(golden));
    auto decoded = decoder.next();
    REQUIRE(decoded);
    REQUIRE(decoded->has_value());
    CHECK(**decoded == golden);
  }
}

TEST_CASE("the protocol document's fetch example with variant null parses", "[proto][golden]") {
  auto doc = load_golden("fetch");
  doc["variant"] = nullptr;
  auto parsed = parse_message(doc, Sender::client);
  REQUIRE(parsed);
  const auto& fetch = std::get<FetchRequest>(*parsed);
  CHECK_FALSE(fetch.variant.has_value());
  CHECK_FALSE(to_json(fetch).contains("variant"));
}

TEST_CASE("every error code survives to_string and error_code_from_string", "[proto][errors]") {
  for (int i = 0; i <= static_cast<int>(ErrorCode::internal); ++i) {
    auto code = static_cast<ErrorCode>(i);
    INFO(to_string(code));
    CHECK(error_code_from_string(to_string(code)) == code);
    auto back = to_error(to_error_reply(Error{code, "m"}, 3));
    CHECK(back.code == code);
    CHECK(back.message == "m");
  }
  CHECK_FALSE(error_code_from_string("no_such_code").has_value());
  CHECK(error_code_from_string("frame_too_large") == ErrorCode::frame_too_large);
  auto unknown = to_error(ErrorReply{1, "future_code", "details"});
  CHECK(unknown.code == ErrorCode::protocol_error);
  CHECK(unknown.message.find("future_code") != std::string::npos);
}

TEST_CASE("negotiate settles on the lower version and the shared capabilities",
          "[proto][handshake]") {
  const std::vector<std::string> daemon_caps{"progress", "fds"};
  SECTION("same version, client order kept, duplicates and unknowns dropped") {
    auto n = negotiate(Hello{1, {"fds", "zstd", "progress", "fds"}, "c", {}}, 1, 1, daemon_caps);
    REQUIRE(n);
    CHECK(n->protocol == 1);
    CHECK(n->capabilities == std::vector<std::string>{"fds", "progress"});
  }
  SECTION("a newer client gets the daemon's maximum") {
    auto n = negotiate(Hello{7, {"progress"}, "c", {}}, 1, 3, daemon_caps);
    REQUIRE(n);
    CHECK(n->protocol == 3);
    CHECK(n->capabilities == std::vector<std::string>{"progress"});
  }
  SECTION("an older client within range keeps its version") {
    auto n = negotiate(Hello{2, {}, "c", {}}, 1, 3, daemon_caps);
    REQUIRE(n);
    CHECK(n->protocol == 2);
    CHECK(n->capabilities.empty());
  }
  SECTION("below the minimum is unsupported_protocol") {
    auto n = negotiate(Hello{1, {"fds"}, "c", {}}, 2, 3, daemon_caps);
    REQUIRE_FALSE(n);
    CHECK(n.error().code == ErrorCode::unsupported_protocol);
  }
  SECTION("version 0 is never supported") {
    auto n = negotiate(Hello{0, {"fds"}, "c", {}}, 0, 1, daemon_caps);
    REQUIRE_FALSE(n);
    CHECK(n.error().code == ErrorCode::unsupported_protocol);
  }
}
