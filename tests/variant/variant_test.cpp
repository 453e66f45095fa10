// Variant acceptance and ranking, mirroring the cases of the `kernels` resolver tests.
#include <catch2/catch.hpp>

#include <algorithm>

#include "kernelhub/variant/variant.hpp"

using kernelhub::ErrorCode;
using kernelhub::variant::Platform;
using kernelhub::variant::rank_variants;
using kernelhub::variant::select_variant;
using kernelhub::variant::VariantCandidate;

namespace {

Platform linux_x86(std::string backend, int torch_minor = 15) {
  Platform p;
  p.torch_major = 2;
  p.torch_minor = torch_minor;
  p.cxx11_abi = true;
  p.backend = std::move(backend);
  p.arch = "x86_64";
  p.os = "linux";
  return p;
}

std::vector<std::string> names_of(const std::vector<VariantCandidate>& ranked) {
  std::vector<std::string> out;
  for (const auto& c : ranked) out.push_back(c.name);
  return out;
}

const VariantCandidate& find(const std::vector<VariantCandidate>& ranked, const std::string& name) {
  const auto it =
      std::find_if(ranked.begin(), ranked.end(), [&](const auto& c) { return c.name == name; });
  REQUIRE(it != ranked.end());
  return *it;
}

}  // namespace

TEST_CASE("exact torch and cpu variant is selected", "[variant]") {
  const auto chosen = select_variant({"torch215-cxx11-cpu-x86_64-linux"}, linux_x86("cpu"));
  REQUIRE(chosen);
  CHECK(*chosen == "torch215-cxx11-cpu-x86_64-linux");
}

TEST_CASE("CUDA picks the best older minor of the same major", "[variant]") {
  const std::vector<std::string> names{"torch215-cxx11-cu126-x86_64-linux",
                                       "torch215-cxx11-cu128-x86_64-linux",
                                       "torch215-cxx11-cu130-x86_64-linux"};
  const auto ranked = rank_variants(names, linux_x86("cu129"));
  REQUIRE(names_of(ranked) == std::vector<std::string>{"torch215-cxx11-cu128-x86_64-linux",
                                                       "torch215-cxx11-cu126-x86_64-linux",
                                                       "torch215-cxx11-cu130-x86_64-linux"});
  CHECK(ranked[0].accepted);
  CHECK(ranked[1].accepted);
  CHECK_FALSE(ranked[2].accepted);
  CHECK_THAT(ranked[2].reason, Catch::Contains("CUDA 13.0") && Catch::Contains("CUDA 12.9"));
}

TEST_CASE("CUDA with a newer minor or another major is rejected", "[variant]") {
  const auto ranked =
      rank_variants({"torch215-cxx11-cu128-x86_64-linux", "torch215-cxx11-cu126-x86_64-linux"},
                    linux_x86("cu126"));
  CHECK(find(ranked, "torch215-cxx11-cu126-x86_64-linux").accepted);
  CHECK_FALSE(find(ranked, "torch215-cxx11-cu128-x86_64-linux").accepted);

  const auto other_major =
      select_variant({"torch215-cxx11-cu126-x86_64-linux"}, linux_x86("cu132"));
  REQUIRE_FALSE(other_major);
  CHECK(other_major.error().code == ErrorCode::no_matching_variant);
}

TEST_CASE("other versioned backends must match exactly", "[variant]") {
  const auto ranked =
      rank_variants({"torch215-cxx11-rocm71-x86_64-linux", "torch215-cxx11-rocm72-x86_64-linux"},
                    linux_x86("rocm72"));
  CHECK(find(ranked, "torch215-cxx11-rocm72-x86_64-linux").accepted);
  const auto& older = find(ranked, "torch215-cxx11-rocm71-x86_64-linux");
  CHECK_FALSE(older.accepted);
  CHECK_THAT(older.reason, Catch::Contains("rocm71") && Catch::Contains("rocm72"));
}

TEST_CASE("torch version must match exactly for arch builds", "[variant]") {
  const auto ranked = rank_variants(
      {"torch214-cxx11-cpu-x86_64-linux", "torch216-cxx11-cpu-x86_64-linux"}, linux_x86("cpu"));
  for (const auto& c : ranked) {
    CHECK_FALSE(c.accepted);
    CHECK_THAT(c.reason, Catch::Contains("torch 2.15"));
  }
}

TEST_CASE("stable ABI build is preferred, newest ABI first, and too-new ABI is rejected",
          "[variant]") {
  const std::vector<std::string> names{
      "torch215-cxx11-cpu-x86_64-linux", "torch-stable-abi213-cpu-x86_64-linux",
      "torch-stable-abi214-cpu-x86_64-linux", "torch-stable-abi216-cpu-x86_64-linux"};
  const auto ranked = rank_variants(names, linux_x86("cpu"));
  REQUIRE(names_of(ranked) == std::vector<std::string>{"torch-stable-abi214-cpu-x86_64-linux",
                                                       "torch-stable-abi213-cpu-x86_64-linux",
                                                       "torch215-cxx11-cpu-x86_64-linux",
                                                       "torch-stable-abi216-cpu-x86_64-linux"});
  CHECK(ranked[2].accepted);
  CHECK_FALSE(ranked[3].accepted);
  CHECK_THAT(ranked[3].reason, Catch::Contains("2.16"));
}

TEST_CASE("universal is the last resort, after the backend's noarch build", "[variant]") {
  const std::vector<std::string> names{"torch-universal", "torch-cpu",
                                       "torch215-cxx11-cpu-x86_64-linux"};
  const auto ranked = rank_variants(names, linux_x86("cpu"));
  REQUIRE(names_of(ranked) == std::vector<std::string>{"torch215-cxx11-cpu-x86_64-linux",
                                                       "torch-cpu", "torch-universal"});
  for (const auto& c : ranked) CHECK(c.accepted);

  const auto only_universal =
      select_variant({"torch-universal", "torch214-cxx11-cpu-x86_64-linux"}, linux_x86("cpu"));
  REQUIRE(only_universal);
  CHECK(*only_universal == "torch-universal");
}

TEST_CASE("noarch build of another backend is rejected, arch beats noarch", "[variant]") {
  const auto ranked = rank_variants({"torch-cuda", "torch-cpu"}, linux_x86("cpu"));
  CHECK(find(ranked, "torch-cpu").accepted);
  CHECK_FALSE(find(ranked, "torch-cuda").accepted);

  const auto cuda =
      rank_variants({"torch-cuda", "torch215-cxx11-cu132-x86_64-linux"}, linux_x86("cu132"));
  REQUIRE(cuda.size() == 2);
  CHECK(cuda[0].name == "torch215-cxx11-cu132-x86_64-linux");
  CHECK(cuda[1].name == "torch-cuda");
  CHECK(cuda[1].accepted);
}

TEST_CASE("Ascend cann backend accepts the torch-npu noarch build", "[variant]") {
  const auto chosen = select_variant({"torch-cann", "torch-npu"}, linux_x86("cann80"));
  REQUIRE(chosen);
  CHECK(*chosen == "torch-npu");
}

TEST_CASE("cxx98 builds are rejected, untagged builds beat cxx11-tagged ones", "[variant]") {
  const auto ranked =
      rank_variants({"torch215-cxx98-cpu-x86_64-linux", "torch215-cxx11-cpu-x86_64-linux",
                     "torch215-cpu-x86_64-linux"},
                    linux_x86("cpu"));
  REQUIRE(names_of(ranked) == std::vector<std::string>{"torch215-cpu-x86_64-linux",
                                                       "torch215-cxx11-cpu-x86_64-linux",
                                                       "torch215-cxx98-cpu-x86_64-linux"});
  CHECK_FALSE(ranked[2].accepted);
  CHECK_THAT(ranked[2].reason, Catch::Contains("ABI"));
}

TEST_CASE("ABI-tagged builds are rejected off Linux", "[variant]") {
  Platform mac = linux_x86("cpu");
  mac.os = "darwin";
  mac.arch = "aarch64";
  const auto ranked =
      rank_variants({"torch215-cxx11-cpu-aarch64-darwin", "torch215-cpu-aarch64-darwin"}, mac);
  CHECK(find(ranked, "torch215-cpu-aarch64-darwin").accepted);
  CHECK_FALSE(find(ranked, "torch215-cxx11-cpu-aarch64-darwin").accepted);
}

TEST_CASE("wrong CPU or OS is rejected with the reason", "[variant]") {
  const auto ranked = rank_variants(
      {"torch215-cxx11-cpu-aarch64-linux", "torch215-cpu-x86_64-darwin"}, linux_x86("cpu"));
  const auto& arm = find(ranked, "torch215-cxx11-cpu-aarch64-linux");
  CHECK_FALSE(arm.accepted);
  CHECK_THAT(arm.reason, Catch::Contains("aarch64") && Catch::Contains("x86_64"));
  const auto& mac = find(ranked, "torch215-cpu-x86_64-darwin");
  CHECK_FALSE(mac.accepted);
  CHECK_THAT(mac.reason, Catch::Contains("darwin") && Catch::Contains("linux"));
}

TEST_CASE("tvm-ffi builds are never accepted", "[variant]") {
  const auto ranked =
      rank_variants({"tvm-ffi01-cpu-x86_64-linux", "torch-universal"}, linux_x86("cpu"));
  REQUIRE(ranked.size() == 2);
  CHECK(ranked[0].name == "torch-universal");
  CHECK_FALSE(ranked[1].accepted);
  CHECK_THAT(ranked[1].reason, Catch::Contains("tvm-ffi runtime"));
}

TEST_CASE("unparsable names are rejected as unrecognised and ranked last", "[variant]") {
  const std::vector<std::string> bad{"foo",
                                     "torch215-cxx11-cuda-x86_64-linux",
                                     "torch215-cxx11-cpu-x86_64",
                                     "torch-stable-abi2-cpu-x86_64-linux",
                                     "torchx15-cpu-x86_64-linux",
                                     "tvm-ffi-cpu-x86_64-linux",
                                     "torch"};
  std::vector<std::string> names = bad;
  names.push_back("torch214-cxx11-cpu-x86_64-linux");  // parsable but rejected: ranks ahead of them
  const auto ranked = rank_variants(names, linux_x86("cpu"));
  REQUIRE(ranked.size() == names.size());
  CHECK(ranked[0].name == "torch214-cxx11-cpu-x86_64-linux");
  for (std::size_t i = 1; i < ranked.size(); ++i) {
    CHECK(ranked[i].name == bad[i - 1]);
    CHECK_FALSE(ranked[i].accepted);
    CHECK(ranked[i].reason == "unrecognised variant name");
  }
}

TEST_CASE("duplicate names are ranked once", "[variant]") {
  const auto ranked = rank_variants({"torch-cpu", "torch-cpu"}, linux_x86("cpu"));
  CHECK(ranked.size() == 1);
}

TEST_CASE("no match lists every variant with its reason and the platform", "[variant]") {
  const Platform p = linux_x86("cpu");
  const auto result =
      select_variant({"torch215-cxx11-cu132-x86_64-linux", "bogus", "torch-cuda"}, p);
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::no_matching_variant);
  const auto& msg = result.error().message;
  CHECK_THAT(msg, Catch::Contains(p.describe()));
  CHECK_THAT(msg, Catch::Contains("torch215-cxx11-cu132-x86_64-linux: built for backend cu132"));
  CHECK_THAT(msg, Catch::Contains("bogus: unrecognised variant name"));
  CHECK_THAT(msg, Catch::Contains("torch-cuda: "));

  const auto empty = select_variant({}, p);
  REQUIRE_FALSE(empty);
  CHECK_THAT(empty.error().message, Catch::Contains("no build variants"));
}

TEST_CASE("platform description names torch, ABI, backend, CPU and OS", "[variant]") {
  CHECK(linux_x86("cu132").describe() == "torch 2.15, cxx11 ABI, cu132, x86_64-linux");
}
