#include <catch2/catch.hpp>

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/metadata.hpp"

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
  CHECK(md->version == "1");
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
      {R"({"version":-1})", ErrorCode::malformed_response},
      {R"({"version":18446744073709551615})", ErrorCode::malformed_response},
      {R"({"version":")" + std::string(65, '1') + "\"}", ErrorCode::malformed_response},
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

TEST_CASE("descriptive fields are lenient: package versions kept, wrong types ignored",
          "[trust][metadata]") {
  // Local library builds carry a package version; older generations typed fields differently.
  auto md = parse_kernel_metadata(
      R"({"id": "_lib_cpu_abc1234", "name": 7, "version": "2.7.4", "unknown": {"x": 1}})");
  REQUIRE(md);
  CHECK(md->id == "_lib_cpu_abc1234");
  CHECK_FALSE(md->name);
  CHECK(md->version == "2.7.4");
  auto odd = parse_kernel_metadata(R"({"version": true, "name": null})");
  REQUIRE(odd);
  CHECK_FALSE(odd->version);
  CHECK_FALSE(odd->name);
}

TEST_CASE("the digest as hex: sha256 only, every value a base64 sha256", "[trust][metadata]") {
  auto md = parse_kernel_metadata(metadata_json());
  REQUIRE(md);
  auto hex = digest_sha256_hex(*md);
  REQUIRE(hex);
  CHECK(hex->size() == 2);
  CHECK(hex->at("__init__.py") == sha256_hex("init"));

  auto none = parse_kernel_metadata(R"({"name": "relu"})");
  REQUIRE(none);
  auto empty = digest_sha256_hex(*none);
  REQUIRE(empty);
  CHECK(empty->empty());

  auto sha512 = parse_kernel_metadata(R"({"digest":{"algorithm":"sha512","files":{}}})");
  REQUIRE(sha512);
  auto refused = digest_sha256_hex(*sha512);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::hash_mismatch);

  auto short_b64 =
      parse_kernel_metadata(R"({"digest":{"algorithm":"sha256","files":{"a":"AAAA"}}})");
  REQUIRE(short_b64);
  auto bad = digest_sha256_hex(*short_b64);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::malformed_response);
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
