#include <catch2/catch.hpp>

#include <fstream>

#include "kernelhub/trust/policy.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::trust;
using kernelhub::util::Environment;

namespace {

// nullopt = variable unset.
const std::vector<std::optional<std::string>> kValues{std::nullopt, "1", "true",  "YES",
                                                      "on",         "0", "false", "garbage"};

bool expected_truthy(const std::optional<std::string>& v) {
  return v && (*v == "1" || *v == "true" || *v == "YES" || *v == "on");
}

Environment env_with(const std::optional<std::string>& trust,
                     const std::optional<std::string>& disable) {
  Environment env;
  if (trust) env.set("DIFFUSERS_TRUST_REMOTE_KERNELS", *trust);
  if (disable) env.set("DIFFUSERS_DISABLE_REMOTE_CODE", *disable);
  return env;
}

}  // namespace

TEST_CASE("decide_trust follows the rule in every cell of org x TRUST x DISABLE",
          "[trust][policy]") {
  const AdminPolicy policy;
  int cells = 0;
  for (const std::string org : {"kernels-community", "SageAttention", "some-user"}) {
    for (const auto& trust : kValues) {
      for (const auto& disable : kValues) {
        const auto env = TrustEnvironment::from(env_with(trust, disable));
        const auto decision = decide_trust(policy, org, env);
        INFO("org=" << org << " TRUST=" << trust.value_or("<unset>")
                    << " DISABLE=" << disable.value_or("<unset>"));
        const bool want =
            !expected_truthy(disable) && (org == "kernels-community" || expected_truthy(trust));
        CHECK(decision.allowed == want);
        if (!decision.allowed) {
          CHECK(decision.reason.find("'" + org + "'") != std::string::npos);
          if (expected_truthy(disable)) {
            CHECK(decision.code == ErrorCode::remote_code_disabled);
            CHECK(decision.reason.find("DIFFUSERS_DISABLE_REMOTE_CODE") != std::string::npos);
          } else {
            CHECK(decision.code == ErrorCode::untrusted_publisher);
            CHECK(decision.reason.find("DIFFUSERS_TRUST_REMOTE_KERNELS=1") != std::string::npos);
          }
        }
        ++cells;
      }
    }
  }
  CHECK(cells == 3 * 8 * 8);
}

TEST_CASE("refusal messages say exactly what to set", "[trust][policy]") {
  const auto refused = decide_trust(AdminPolicy{}, "SageAttention", TrustEnvironment{false, false});
  CHECK(refused.reason ==
        "publisher 'SageAttention' is not trusted: set DIFFUSERS_TRUST_REMOTE_KERNELS=1 to allow "
        "kernels from "
        "publishers other than kernels-community");
  const auto disabled =
      decide_trust(AdminPolicy{}, "kernels-community", TrustEnvironment{true, true});
  CHECK(
      disabled.reason ==
      "remote kernels are disabled by DIFFUSERS_DISABLE_REMOTE_CODE: unset it to load kernels from "
      "'kernels-community'");
}

TEST_CASE("org names match exactly, so a different spelling is not trusted", "[trust][policy]") {
  CHECK_FALSE(decide_trust(AdminPolicy{}, "Kernels-Community", TrustEnvironment{}).allowed);
  CHECK_FALSE(decide_trust(AdminPolicy{}, "kernels-community2", TrustEnvironment{}).allowed);
}

TEST_CASE("admin policy bounds what a client may opt into", "[trust][policy]") {
  AdminPolicy admin;
  admin.trusted_publishers = {"kernels-community", "my-org"};
  admin.opt_in_publishers = {"SageAttention"};
  admin.allow_any_opt_in = false;
  const TrustEnvironment opt_in{true, false};
  const TrustEnvironment plain{false, false};

  CHECK(decide_trust(admin, "my-org", plain).allowed);
  CHECK_FALSE(decide_trust(admin, "SageAttention", plain).allowed);
  CHECK(decide_trust(admin, "SageAttention", opt_in).allowed);
  const auto evil = decide_trust(admin, "evil-org", opt_in);
  CHECK_FALSE(evil.allowed);
  CHECK(evil.code == ErrorCode::untrusted_publisher);
  CHECK(evil.reason.find("'evil-org'") != std::string::npos);
  CHECK(evil.reason.find("administrator") != std::string::npos);

  SECTION("admin-level disable refuses even trusted publishers") {
    admin.disable_remote_code = true;
    const auto d = decide_trust(admin, "kernels-community", plain);
    CHECK_FALSE(d.allowed);
    CHECK(d.code == ErrorCode::remote_code_disabled);
    CHECK(d.reason.find("'kernels-community'") != std::string::npos);
  }
  SECTION("a client can narrow trust with DISABLE") {
    CHECK_FALSE(decide_trust(admin, "my-org", TrustEnvironment{true, true}).allowed);
  }
}

TEST_CASE("policy file parses every key", "[trust][policy]") {
  testing::TempDir dir;
  const auto path = dir.path() / "policy.toml";
  std::ofstream(path) << "[trust]\npublishers = [\"my-org\"]\nopt_in = [\"SageAttention\"]\n"
                         "allow_any_opt_in = false\ndisable_remote_code = true\n";
  auto policy = load_policy_file(path);
  REQUIRE(policy);
  CHECK(policy->trusted_publishers == std::set<std::string>{"my-org"});
  CHECK(policy->opt_in_publishers == std::set<std::string>{"SageAttention"});
  CHECK_FALSE(policy->allow_any_opt_in);
  CHECK(policy->disable_remote_code);
}

TEST_CASE("empty policy file keeps the defaults", "[trust][policy]") {
  auto policy = parse_policy("");
  REQUIRE(policy);
  CHECK(policy->trusted_publishers == std::set<std::string>{"kernels-community"});
  CHECK(policy->allow_any_opt_in);
  CHECK_FALSE(policy->disable_remote_code);
}

TEST_CASE("bad policy files fail with ErrorCode::policy and say why", "[trust][policy]") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[trust]\npublisher = [\"x\"]\n", "unknown key 'publisher'"},
      {"[other]\nx = 1\n", "unknown table or key 'other'"},
      {"[trust]\npublishers = \"my-org\"\n", "publishers must be an array"},
      {"[trust]\nopt_in = [1, 2]\n", "opt_in must contain only non-empty strings"},
      {"[trust]\nallow_any_opt_in = \"no\"\n", "allow_any_opt_in must be true or false"},
      {"[trust]\ndisable_remote_code = 1\n", "disable_remote_code must be true or false"},
      {"[trust\n", "invalid TOML"},
  };
  for (const auto& [text, needle] : cases) {
    INFO(text);
    auto policy = parse_policy(text);
    REQUIRE_FALSE(policy);
    CHECK(policy.error().code == ErrorCode::policy);
    CHECK(policy.error().message.find(needle) != std::string::npos);
  }
  auto missing = load_policy_file("/nonexistent/kernelhub/policy.toml");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::policy);
}

TEST_CASE("[signatures]: warn by default, kernels-community's identity built in",
          "[trust][policy]") {
  const AdminPolicy defaults;
  CHECK(defaults.signatures.mode == SignatureMode::warn);
  CHECK(defaults.signatures.trusted_root == "production");
  REQUIRE(defaults.signatures.publishers.size() == 1);
  const auto& kc = defaults.signatures.publishers.at("kernels-community");
  CHECK(kc.issuer == "https://token.actions.githubusercontent.com");
  CHECK(kc.source_repository == "https://github.com/huggingface/kernels-community");
  CHECK(kc.build_signer_uris.size() == 4);
  CHECK(kc.require_issuer_v2);
}

TEST_CASE("[signatures] parses mode, root and per-publisher identities", "[trust][policy]") {
  auto policy = parse_policy(R"(
[signatures]
mode = "enforce"
trusted_root = "/etc/kernelhub/trusted_root.json"
[signatures.publishers.my-org]
issuer = "https://token.actions.githubusercontent.com"
source_repository = "https://github.com/my-org/kernels"
build_signers = ["https://github.com/my-org/kernels/.github/workflows/release.yaml@refs/heads/main"]
[signatures.publishers.kernels-test]
issuer = "https://github.com/login/oauth"
identities = ["me@danieldk.eu"]
)");
  REQUIRE(policy);
  CHECK(policy->signatures.mode == SignatureMode::enforce);
  CHECK(policy->signatures.trusted_root == "/etc/kernelhub/trusted_root.json");
  CHECK(policy->signatures.publishers.size() == 3);  // kernels-community stays built in
  CHECK(policy->signatures.publishers.at("my-org").build_signer_uris.size() == 1);
  CHECK(policy->signatures.publishers.at("kernels-test").sans ==
        std::vector<std::string>{"me@danieldk.eu"});
}

TEST_CASE("[signatures] refuses what would weaken or confuse it", "[trust][policy]") {
  const auto refused = [](const char* text, const char* needle) {
    auto policy = parse_policy(text);
    REQUIRE_FALSE(policy);
    CHECK(policy.error().code == ErrorCode::policy);
    INFO(policy.error().message);
    CHECK(policy.error().message.find(needle) != std::string::npos);
  };
  refused("[signatures]\nmode = \"strict\"\n", R"("off", "warn" or "enforce")");
  refused("[signatures]\nroot = \"x\"\n", "unknown key 'root'");
  // An issuer alone admits every workflow that issuer serves.
  refused("[signatures.publishers.a]\nissuer = \"https://token.actions.githubusercontent.com\"\n",
          "needs build_signers or identities");
  refused("[signatures.publishers.a]\nidentities = [\"x@y\"]\n", "needs an issuer");
  refused("[signatures.publishers.a]\nissuer = \"i\"\nidentities = [\"x\"]\nrepo = \"r\"\n",
          "unknown key 'repo'");
}

TEST_CASE("[cache] parses sizes, percentages and durations, and refuses the rest",
          "[trust][policy][cache]") {
  auto policy = parse_policy(R"(
[cache]
max_size = "50GiB"
min_free = "10%"
max_unused_age = "30d"
check_interval = "5m"
in_use_grace = 0
)");
  REQUIRE(policy);
  CHECK(policy->cache.max_size == 50ULL << 30);
  CHECK(policy->cache.min_free_percent == 10.0);
  CHECK_FALSE(policy->cache.min_free_bytes);
  CHECK(policy->cache.max_unused_age == std::chrono::hours(24 * 30));
  CHECK(policy->cache.check_interval == std::chrono::minutes(5));
  CHECK(policy->cache.in_use_grace == std::chrono::seconds(0));
  CHECK(policy->cache.bounded());

  auto numbers =
      parse_policy("[cache]\nmax_size = 1000000\nmin_free = \"2G\"\nmax_unused_age = 3600\n");
  REQUIRE(numbers);
  CHECK(numbers->cache.max_size == 1'000'000);
  CHECK(numbers->cache.min_free_bytes == 2'000'000'000);
  CHECK(numbers->cache.max_unused_age == std::chrono::hours(1));
  CHECK_FALSE(parse_policy("")->cache.bounded());

  for (const char* bad : {"[cache]\nmax_size = \"lots\"", "[cache]\nmax_size = -1",
                          "[cache]\nmin_free = \"100%\"", "[cache]\nmin_free = \"x%\"",
                          "[cache]\nmax_unused_age = \"3y\"", "[cache]\ncheck_interval = 0",
                          "[cache]\nmax_size = true", "[cache]\nsize = 1", "cache = 1"}) {
    INFO(bad);
    const auto parsed = parse_policy(bad);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code == ErrorCode::policy);
  }
  CHECK(parse_policy("[cache]\nsize = 1").error().message.find("max_size, min_free") !=
        std::string::npos);
}
