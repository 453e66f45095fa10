// kernelhubd's warm path on its own: what a flight served answers the next request with the
// same repo, Ref and selection, within the resolve TTL, and nothing else.
#include <catch2/catch.hpp>

#include "kernelhub/daemon/manifest_memo.hpp"

using namespace kernelhub;

namespace {

const trust::RepoId kRelu{"kernels-community", "relu"};

hub::FetchResult served(const std::string& commit) {
  hub::FetchResult result;
  result.manifest.repo = kRelu;
  result.manifest.commit = commit;
  result.manifest.variants = {"torch215-cxx11-cpu-x86_64-linux"};
  result.manifest.files = {{"build/torch215-cxx11-cpu-x86_64-linux/__init__.py", 1, "sha", "etag"}};
  return result;
}

fetch::FlightKey key_of(const fetch::Request& request) {
  return {{request.repo, request.ref}, fetch::Selection::of(request), false};
}

}  // namespace

TEST_CASE("the warm path answers the same request, under the same selection, within the TTL",
          "[daemon][memo]") {
  daemon::ManifestMemo memo(std::chrono::seconds(60));
  fetch::Request v1(kRelu, *fetch::Ref::version(1));
  const auto key = key_of(v1);
  CHECK_FALSE(memo.warm(key.resolve, key.selection));

  memo.remember(key, served(std::string(40, 'a')));
  const auto warm = memo.warm(key.resolve, key.selection);
  REQUIRE(warm);
  CHECK(warm->manifest.commit == std::string(40, 'a'));
  CHECK(warm->manifest.files.size() == 1);

  // Another selection of the same commit, or another Ref, is not answered from it.
  fetch::Request all = v1;
  all.variants = fetch::VariantChoice::all();
  CHECK_FALSE(memo.warm(key.resolve, fetch::Selection::of(all)));
  fetch::Request v2(kRelu, *fetch::Ref::version(2));
  CHECK_FALSE(memo.warm(key_of(v2).resolve, key.selection));

  memo.forget_all();
  CHECK_FALSE(memo.warm(key.resolve, key.selection));
}

TEST_CASE("a resolution is warm for the resolve TTL, then asked again", "[daemon][memo]") {
  auto now = std::chrono::steady_clock::time_point{};
  daemon::ManifestMemo memo(std::chrono::seconds(60), [&now] { return now; });
  fetch::Request v1(kRelu, *fetch::Ref::version(1));
  const auto key = key_of(v1);
  memo.remember(key, served(std::string(40, 'b')));
  now += std::chrono::seconds(60);
  CHECK(memo.warm(key.resolve, key.selection));
  now += std::chrono::milliseconds(1);
  CHECK_FALSE(memo.warm(key.resolve, key.selection));
}
