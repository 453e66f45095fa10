#include <catch2/catch.hpp>

#include "trust/digest.hpp"
#include "trust/metadata.hpp"

using namespace kernelhub;
using namespace kernelhub::trust;

namespace {

std::string b64_sha256(std::string_view content) {
  Sha256 h;
  h.update(content);
  return h.final_base64();
}

// A variant with two files and a digest in metadata.json, as kernel-builder writes it.
std::string metadata_json() {
  return R"({"name":"relu","id":"_relu_cpu_30dc0ae","version":1,"license":"Apache-2.0",
    "python-depends":[],"backend":{"type":"cpu"},"provenance":{"kernel":{"commit":"x","dirty":false}},
    "digest":{"algorithm":"sha256","files":{"__init__.py":")" +
         b64_sha256("init") + R"(","_relu_cpu_30dc0ae.abi3.so":")" + b64_sha256("elf") + R"("}}})";
}

std::map<std::string, std::string> actual_files() {
  return {{"__init__.py", sha256_hex("init")},
          {"_relu_cpu_30dc0ae.abi3.so", sha256_hex("elf")},
          {"metadata.json", sha256_hex("whatever")},
          {"metadata.json.sigstore", sha256_hex("sig")},
          {"__pycache__/x.cpython-311.pyc", sha256_hex("bytecode")},
          {"sub/y.pyc", sha256_hex("bytecode")}};
}

}  // namespace

TEST_CASE("metadata.json fields are parsed and unknown fields ignored", "[trust][metadata]") {
  auto md = parse_kernel_metadata(metadata_json());
  REQUIRE(md);
  CHECK(md->name == "relu");
  CHECK(md->id == "_relu_cpu_30dc0ae");
  CHECK(md->version == 1);
  CHECK(md->digest_algorithm == "sha256");
  CHECK(md->file_digests.size() == 2);
  CHECK(md->file_digests.at("__init__.py") == b64_sha256("init"));
}

TEST_CASE("old metadata.json with only python-depends parses with every field empty",
          "[trust][metadata]") {
  auto md = parse_kernel_metadata(R"({"python-depends": ["einops"]})");
  REQUIRE(md);
  CHECK_FALSE(md->id);
  CHECK_FALSE(md->name);
  CHECK_FALSE(md->version);
  CHECK_FALSE(md->has_digest());
  CHECK(verify_variant_digests(*md, actual_files()));  // no digest: nothing to check
}

TEST_CASE("malformed or oversized metadata.json is refused", "[trust][metadata]") {
  const std::vector<std::pair<std::string, ErrorCode>> cases{
      {"not json", ErrorCode::malformed_response},
      {"[1,2]", ErrorCode::malformed_response},
      {R"({"version":"1"})", ErrorCode::malformed_response},
      {R"({"id":5})", ErrorCode::malformed_response},
      {R"({"digest":{"files":{}}})", ErrorCode::malformed_response},
      {R"({"digest":{"algorithm":"sha256","files":{"a":1}}})", ErrorCode::malformed_response},
      {R"({"digest":{"algorithm":"sha256","files":{"../../x.so":"AAAA"}}})",
       ErrorCode::unsafe_path},
      {"{\"x\":\"" + std::string(kMaxMetadataBytes, 'a') + "\"}", ErrorCode::too_large},
  };
  for (const auto& [text, code] : cases) {
    INFO(text.substr(0, 80));
    auto md = parse_kernel_metadata(text);
    REQUIRE_FALSE(md);
    CHECK(md.error().code == code);
  }
}

TEST_CASE("matching files verify, exclusions are not required to be listed", "[trust][metadata]") {
  auto md = parse_kernel_metadata(metadata_json());
  REQUIRE(md);
  auto r = verify_variant_digests(*md, actual_files());
  INFO((r ? "" : r.error().message));
  CHECK(r);
}

TEST_CASE("a changed file is a hash_mismatch naming the file", "[trust][metadata]") {
  auto md = parse_kernel_metadata(metadata_json());
  REQUIRE(md);
  auto files = actual_files();
  files["_relu_cpu_30dc0ae.abi3.so"] = sha256_hex("elf!");
  auto r = verify_variant_digests(*md, files);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::hash_mismatch);
  CHECK(r.error().message.find("_relu_cpu_30dc0ae.abi3.so") != std::string::npos);
}

TEST_CASE("a missing listed file is entry_not_found", "[trust][metadata]") {
  auto md = parse_kernel_metadata(metadata_json());
  REQUIRE(md);
  auto files = actual_files();
  files.erase("__init__.py");
  auto r = verify_variant_digests(*md, files);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::entry_not_found);
  CHECK(r.error().message.find("__init__.py") != std::string::npos);
}

TEST_CASE("an unlisted extra file is refused", "[trust][metadata]") {
  auto md = parse_kernel_metadata(metadata_json());
  REQUIRE(md);
  auto files = actual_files();
  files["evil.so"] = sha256_hex("evil");
  files["sub/metadata.json"] = sha256_hex("nested metadata is not top-level");
  auto r = verify_variant_digests(*md, files);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::hash_mismatch);
  CHECK(r.error().message.find("not listed in metadata.json") != std::string::npos);
  CHECK((r.error().message.find("evil.so") != std::string::npos ||
         r.error().message.find("sub/metadata.json") != std::string::npos));
}

TEST_CASE("only the sha256 algorithm is accepted", "[trust][metadata]") {
  auto md = parse_kernel_metadata(R"({"digest":{"algorithm":"sha512","files":{}}})");
  REQUIRE(md);
  auto r = verify_variant_digests(*md, {});
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::hash_mismatch);
  CHECK(r.error().message.find("sha512") != std::string::npos);
}

TEST_CASE("excluded_from_digest matches kernel-builder's walk", "[trust][metadata]") {
  CHECK(excluded_from_digest("metadata.json"));
  CHECK(excluded_from_digest("metadata.json.sigstore"));
  CHECK(excluded_from_digest("relu/__pycache__/ops.cpython-312.pyc"));
  CHECK(excluded_from_digest("__pycache__/notes.txt"));
  CHECK(excluded_from_digest("a.pyc"));
  CHECK_FALSE(excluded_from_digest("relu/metadata.json"));
  CHECK_FALSE(excluded_from_digest("__init__.py"));
  CHECK_FALSE(excluded_from_digest("x__pycache__/a.py"));
}
