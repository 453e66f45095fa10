// hub::decide_signature, the judgement of a receipt at every hand-out: the mode, the
// publisher's configured identity, and the binding of the signed metadata.json to the request;
// and the receipt's stored form.
#include <catch2/catch.hpp>

#include "kernelhub/hub/signature_gate.hpp"

using namespace kernelhub;
using hub::SignatureReceipt;

namespace {

const std::string kVariant = "torch215-cxx11-cpu-x86_64-linux";

SignatureReceipt kernels_community_receipt() {
  SignatureReceipt receipt;
  receipt.status = SignatureReceipt::Status::verified;
  receipt.variant = kVariant;
  receipt.metadata_etag = "0123";
  receipt.root_id = "abcd";
  receipt.signed_at = 1'764'000'000;
  receipt.identity.sans = {
      "https://github.com/huggingface/kernels-community/.github/workflows/build.yaml@refs/heads/"
      "main"};
  receipt.identity.issuer_v1 = receipt.identity.issuer_v2 =
      "https://token.actions.githubusercontent.com";
  receipt.identity.source_repository = "https://github.com/huggingface/kernels-community";
  receipt.identity.build_signer_uri = receipt.identity.sans[0];
  receipt.stated_version = "1";
  receipt.stated_backend = "cpu";
  return receipt;
}

trust::SignatureSettings settings(trust::SignatureMode mode) {
  trust::SignatureSettings s;
  s.mode = mode;
  return s;
}

const trust::RepoId kRelu = *trust::RepoId::parse("kernels-community/relu");

}  // namespace

TEST_CASE("a verified kernels-community receipt passes enforce, bound to its version",
          "[hub][signatures]") {
  const auto enforce = settings(trust::SignatureMode::enforce);
  auto verdict = hub::decide_signature(enforce, kRelu, kernels_community_receipt(), 1);
  REQUIRE(verdict);
  CHECK_FALSE(*verdict);
  // A revision request states no version: nothing to bind it to.
  CHECK(hub::decide_signature(enforce, kRelu, kernels_community_receipt(), std::nullopt));
  auto other_version = hub::decide_signature(enforce, kRelu, kernels_community_receipt(), 2);
  REQUIRE_FALSE(other_version);
  CHECK_THAT(other_version.error().message,
             Catch::Contains("binding: the signed metadata.json is of version 1, v2"));
}

TEST_CASE("an org with no identity configured cannot pass enforce, warn serves it with a warning",
          "[hub][signatures]") {
  const auto other = *trust::RepoId::parse("my-org/relu");
  auto refused = hub::decide_signature(settings(trust::SignatureMode::enforce), other,
                                       kernels_community_receipt(), 1);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::signature_invalid);
  CHECK_THAT(refused.error().message,
             Catch::Contains("no signing identity is configured for my-org (add "
                             "[signatures.publishers.my-org] to the admin policy)"));
  auto warned = hub::decide_signature(settings(trust::SignatureMode::warn), other,
                                      kernels_community_receipt(), 1);
  REQUIRE(warned);
  REQUIRE(*warned);
  CHECK_THAT(**warned, Catch::StartsWith("unverified signature: my-org/relu build/" + kVariant));
  CHECK_THAT(**warned, Catch::EndsWith("(served: [signatures] mode is warn)"));
  // Configured for that org, with kernels-community's signer: passes.
  auto configured = settings(trust::SignatureMode::enforce);
  configured.publishers["my-org"] = trust::kernels_community_policy();
  CHECK(hub::decide_signature(configured, other, kernels_community_receipt(), 1));
}

TEST_CASE("off judges nothing, missing and invalid receipts name what failed",
          "[hub][signatures]") {
  SignatureReceipt missing;
  missing.variant = kVariant;
  missing.failure = "signature: the variant has no metadata.json.sigstore";
  auto off = hub::decide_signature(settings(trust::SignatureMode::off), kRelu, missing, 1);
  REQUIRE(off);
  CHECK_FALSE(*off);
  auto refused = hub::decide_signature(settings(trust::SignatureMode::enforce), kRelu, missing, 1);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::signature_missing);
  SignatureReceipt invalid = missing;
  invalid.status = SignatureReceipt::Status::invalid;
  invalid.failure = "checkpoint: the log's signature does not verify";
  auto bad = hub::decide_signature(settings(trust::SignatureMode::enforce), kRelu, invalid, 1);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::signature_invalid);
  CHECK_THAT(bad.error().message, Catch::Contains("build/" + kVariant + ": checkpoint: "));
}

TEST_CASE("a signed CPU build in a CUDA-named folder is refused by the binding",
          "[hub][signatures]") {
  auto receipt = kernels_community_receipt();
  receipt.variant = "torch215-cxx11-cu128-x86_64-linux";
  auto refused = hub::decide_signature(settings(trust::SignatureMode::enforce), kRelu, receipt, 1);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message,
             Catch::Contains("is a cpu build, build/" + receipt.variant + " is a cuda folder"));
  // A universal build names no backend: nothing to compare.
  receipt.variant = "torch-universal";
  CHECK(hub::decide_signature(settings(trust::SignatureMode::enforce), kRelu, receipt, 1));
}

TEST_CASE("a receipt survives its stored form, a malformed one is no receipt",
          "[hub][signatures]") {
  const auto receipt = kernels_community_receipt();
  const auto back = hub::receipt_from_json(hub::receipt_to_json(receipt));
  REQUIRE(back);
  CHECK(back->status == receipt.status);
  CHECK(back->variant == receipt.variant);
  CHECK(back->metadata_etag == receipt.metadata_etag);
  CHECK(back->root_id == receipt.root_id);
  CHECK(back->identity.sans == receipt.identity.sans);
  CHECK(back->identity.source_repository == receipt.identity.source_repository);
  CHECK(back->stated_version == receipt.stated_version);
  CHECK(back->signed_at == receipt.signed_at);
  CHECK_FALSE(hub::receipt_from_json("{}"));
  CHECK_FALSE(hub::receipt_from_json(R"({"receipt":1,"status":"trusted"})"));
  CHECK_FALSE(hub::receipt_from_json("[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]"));
}
