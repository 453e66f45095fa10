// The C++ Sigstore verifier against the offline test signer's cases
// (tests/trust/sigstore/make_cases.py): every case gets its expected verdict, and every
// failing case fails at the check it is about, not at an earlier one by accident. The cases
// are minted at test time (Fulcio leaves live 10 minutes), with the venv python.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "kernelhub/trust/sigstore/identity_policy.hpp"
#include "kernelhub/trust/sigstore/pinned_roots.hpp"
#include "kernelhub/trust/sigstore/sigstore_time.hpp"
#include "kernelhub/trust/sigstore/verifier.hpp"
#include "support/process.hpp"

namespace sigstore = kernelhub::trust::sigstore;
using kernelhub::testing::run_command;
using kernelhub::testing::slurp;
using kernelhub::testing::TempDir;

namespace {

// Each case -> the check its failure must name ("" = it must pass). A case the signer
// makes that is missing here fails the test, so a new case cannot pass unexamined.
const std::map<std::string, std::string>& expected_checks() {
  static const std::map<std::string, std::string> kChecks{
      {"v01-rekor1", ""},
      {"v02-rekor1", ""},
      {"v03-rekor1", ""},
      {"v03-rekor1-tsa", ""},
      {"v03-rekor2-tsa", ""},
      {"kernels-policy-pass", ""},
      {"kernels-policy-pass-mac", ""},
      {"ca-validfor-ended", "certificate chain"},
      {"cert-expired", "certificate chain"},
      {"cert-not-yet-valid", "certificate chain"},
      {"integrated-time-outside-validity", "certificate chain"},
      {"tsa-time-outside-validity", "certificate chain"},
      {"other-ca", "certificate chain"},
      {"sct-missing", "SCT"},
      {"sct-forged", "SCT"},
      {"sct-unknown-log", "SCT"},
      {"wrong-identity-repo", "identity"},
      {"wrong-identity-workflow", "identity"},
      {"wrong-identity-branch", "identity"},
      {"wrong-issuer", "identity"},
      {"policy-wrong-source-repo", "identity"},
      {"policy-wrong-build-signer", "identity"},
      {"tlog-unknown-log-id", "transparency log"},
      {"tlog-validfor-ended", "transparency log"},
      {"inclusion-proof-broken", "inclusion proof"},
      {"inclusion-proof-wrong-size", "inclusion proof"},
      {"checkpoint-other-key", "checkpoint"},
      {"checkpoint-root-mismatch", "checkpoint"},
      {"checkpoint-size-mismatch", "checkpoint"},
      {"set-forged", "inclusion promise (SET)"},
      {"tsa-untrusted", "time"},
      {"tsa-wrong-message", "time"},
      {"tsa-validfor-ended", "time"},
      {"tsa-undecodable", "bundle"},
      {"tsa-truncated", "bundle"},
      {"message-digest-mismatch", "message digest"},
      {"signature-bitflip", "artifact signature"},
      {"log-body-other-artifact", "log body"},
      {"dsse-bundle", "bundle"},
      {"two-tlog-entries", "bundle"},
      {"rekor2-no-timestamp", "bundle"},
      {"unknown-media-type", "bundle"},
      {"truncated", "bundle"},
      {"oversized", "bundle"},
      {"json-bomb-depth", "bundle"},
      {"json-bomb-width", "bundle"},
      {"not-json", "bundle"},
  };
  return kChecks;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// The keys and the cases, minted once per test process.
const std::filesystem::path& minted() {
  static TempDir dir;
  static const bool kMade = [] {
    const char* python = std::getenv("KERNELHUB_PYTHON");
    REQUIRE(python != nullptr);  // the venv python mints the cases; without it, fail
    const std::string scripts = std::string(KH_SOURCE_DIR) + "/tests/trust/sigstore/";
    const auto init =
        run_command({python, scripts + "test_signer.py", "init", (dir.path() / "keys").string()});
    INFO(init.err);
    REQUIRE(init.exit_code == 0);
    const auto cases =
        run_command({python, scripts + "make_cases.py", (dir.path() / "keys").string(),
                     (dir.path() / "cases").string()});
    INFO(cases.err);
    REQUIRE(cases.exit_code == 0);
    return true;
  }();
  (void)kMade;
  return dir.path();
}

sigstore::IdentityPolicy case_policy(const std::filesystem::path& dir) {
  sigstore::IdentityPolicy policy;
  if (std::filesystem::exists(dir / "policy.json")) {
    const auto spec = nlohmann::json::parse(slurp(dir / "policy.json"));
    policy.issuer = spec.at("issuer").get<std::string>();
    policy.require_issuer_v2 = true;
    policy.source_repository = spec.at("source_repository").get<std::string>();
    policy.build_signer_uris = spec.at("build_signer_uris").get<std::vector<std::string>>();
  } else {
    policy.sans.push_back(trimmed(slurp(dir / "identity")));
    policy.issuer = trimmed(slurp(dir / "issuer"));
  }
  return policy;
}

}  // namespace

TEST_CASE("each minted Sigstore case gets its verdict, failing at the check it is about",
          "[sigstore]") {
  const auto& root_dir = minted();
  auto default_root =
      sigstore::load_trusted_root_setting((root_dir / "keys" / "trusted_root.json").string());
  REQUIRE(default_root);
  std::size_t cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root_dir / "cases")) {
    const std::string name = entry.path().filename().string();
    INFO("case " << name);
    const auto expected = expected_checks().find(name);
    REQUIRE(expected != expected_checks().end());
    REQUIRE(trimmed(slurp(entry.path() / "expect")) ==
            (expected->second.empty() ? "pass" : "fail"));
    std::optional<sigstore::TrustedRoot> override_root;
    if (std::filesystem::exists(entry.path() / "trusted_root.json")) {
      auto loaded =
          sigstore::load_trusted_root_setting((entry.path() / "trusted_root.json").string());
      REQUIRE(loaded);
      override_root = std::move(*loaded);
    }
    const auto verified = sigstore::verify_artifact_bundle(
        slurp(entry.path() / "artifact"), slurp(entry.path() / "bundle.sigstore.json"),
        override_root ? *override_root : *default_root, case_policy(entry.path()));
    if (expected->second.empty()) {
      INFO((verified ? std::string() : verified.error().message));
      CHECK(verified);
    } else {
      REQUIRE_FALSE(verified);
      CHECK(verified.error().code == kernelhub::ErrorCode::signature_invalid);
      CHECK(verified.error().message.starts_with(expected->second + ": "));
    }
    ++cases;
  }
  CHECK(cases == expected_checks().size());
}

// Issue 21: a bundle whose RFC 3161 timestamp cannot be decoded gave "Verified OK" when an
// inclusion promise supplied the time anyway; sigstore-python refuses such a bundle.
TEST_CASE("a signed timestamp that cannot be decoded fails the bundle, naming it", "[sigstore]") {
  const auto& root_dir = minted();
  auto root =
      sigstore::load_trusted_root_setting((root_dir / "keys" / "trusted_root.json").string());
  REQUIRE(root);
  for (const auto* name : {"tsa-undecodable", "tsa-truncated"}) {
    INFO("case " << name);
    const auto dir = root_dir / "cases" / name;
    const auto verified = sigstore::verify_artifact_bundle(
        slurp(dir / "artifact"), slurp(dir / "bundle.sigstore.json"), *root, case_policy(dir));
    REQUIRE_FALSE(verified);
    CHECK(verified.error().code == kernelhub::ErrorCode::signature_invalid);
    CHECK_THAT(verified.error().message,
               Catch::StartsWith("bundle: signed timestamp 1 of 1 cannot be decoded: "));
  }
}

TEST_CASE("a verified signature reports the signer's identity and the signing time", "[sigstore]") {
  const auto dir = minted() / "cases" / "v03-rekor1";
  auto root =
      sigstore::load_trusted_root_setting((minted() / "keys" / "trusted_root.json").string());
  REQUIRE(root);
  const auto verified =
      sigstore::verify_artifact_bundle(slurp(dir / "artifact"), slurp(dir / "bundle.sigstore.json"),
                                       *root, sigstore::kernels_community_policy());
  REQUIRE(verified);
  CHECK(verified->identity.source_repository == "https://github.com/huggingface/kernels-community");
  CHECK(verified->identity.issuer_v2 == "https://token.actions.githubusercontent.com");
  REQUIRE(verified->verified_times.size() == 1);
  const auto now = static_cast<sigstore::UnixSeconds>(std::time(nullptr));
  CHECK(verified->verified_times[0] <= now);
  CHECK(verified->verified_times[0] > now - 3600);
}

TEST_CASE("the pinned production and staging trusted roots load", "[sigstore]") {
  for (const char* name : {"production", "staging"}) {
    INFO(name);
    auto root = sigstore::load_trusted_root_setting(name);
    REQUIRE(root);
    CHECK(!root->certificate_authorities.empty());
    CHECK(root->tlogs.size() >= 2);  // a Rekor v1 (ECDSA) and a v2 (Ed25519) log
    CHECK(root->timestamp_authorities.size() >= 1);
  }
  auto missing = sigstore::load_trusted_root_setting("/nonexistent/trusted_root.json");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == kernelhub::ErrorCode::policy);
}

TEST_CASE("RFC 3339 times of trusted roots parse strictly", "[sigstore]") {
  CHECK(sigstore::parse_rfc3339("2021-03-07T03:20:29Z") == 1615087229);
  CHECK(sigstore::parse_rfc3339("2022-12-31T23:59:59.999Z") == 1672531199);
  CHECK(sigstore::parse_rfc3339("2021-03-07T05:20:29+02:00") == 1615087229);
  CHECK_FALSE(sigstore::parse_rfc3339("2021-03-07 03:20:29Z"));
  CHECK_FALSE(sigstore::parse_rfc3339("2021-13-07T03:20:29Z"));
  CHECK_FALSE(sigstore::parse_rfc3339("2021-03-07T03:20:29"));
  CHECK_FALSE(sigstore::parse_rfc3339("2021-03-07T03:20:29Zjunk"));
}

TEST_CASE("a trusted root is refused when nothing could verify against it", "[sigstore]") {
  auto empty = sigstore::parse_trusted_root(
      R"({"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"})");
  REQUIRE_FALSE(empty);
  CHECK(empty.error().code == kernelhub::ErrorCode::policy);
  auto wrong_type = sigstore::parse_trusted_root(R"({"mediaType":"text/plain"})");
  REQUIRE_FALSE(wrong_type);
  CHECK(wrong_type.error().message.find("mediaType") != std::string::npos);
}
