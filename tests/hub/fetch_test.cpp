// The fetch pipeline against a real HubServer on loopback: cache layout, cache hits,
// offline mode, trust refusals, version/revision/variant resolution.
#include <catch2/catch.hpp>

#include "hub/fetch_fixture.hpp"
#include "kernelhub/trust/digest.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;
namespace fs = std::filesystem;

namespace {

fs::path repo_dir(const fs::path& cache_root) {
  return cache_root / "kernels--kernels-community--demo-fetch";
}

std::size_t count_files(const fs::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory()) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("fetch publishes the selected variant into an HF-compatible cache, file by file") {
  FetchFixture fx;
  auto result = fx.fetch();
  REQUIRE(result);
  CHECK(result->manifest.commit == fx.commit);
  CHECK(result->manifest.variants == std::vector<std::string>{kCpuVariant});
  CHECK_FALSE(result->manifest.from_cache);
  const fs::path repo = repo_dir(fx.cache_root);
  CHECK(result->manifest.snapshot_path == repo / "snapshots" / fx.commit);

  auto expected = cpu_variant_files();
  expected["metadata.json"] = slurp(fx.tmp.path() / "src/build" / kCpuVariant / "metadata.json");
  REQUIRE(result->manifest.files.size() == expected.size());
  for (const auto& [rel, content] : expected) {
    const fs::path link = result->manifest.snapshot_path / "build" / kCpuVariant / rel;
    INFO(rel);
    REQUIRE(fs::is_symlink(link));
    const fs::path target = fs::read_symlink(link);
    CHECK(target.is_relative());
    CHECK(target.parent_path() == fs::path("../../../../blobs"));
    CHECK(slurp(link) == content);
    // LFS files are keyed by sha256, git files by their git blob sha1.
    const std::string etag = content.size() > 1024 * 1024 ? trust::sha256_hex(content)
                                                          : trust::git_blob_sha1_hex(content);
    CHECK(target.filename() == etag);
    // Outside the lambda: clang 14 cannot capture a structured binding.
    const std::string want = (fs::path("build") / kCpuVariant / rel).string();
    const auto file = std::find_if(result->manifest.files.begin(), result->manifest.files.end(),
                                   [&](const fetch::ManifestFile& f) { return f.path == want; });
    REQUIRE(file != result->manifest.files.end());
    CHECK(file->sha256 == trust::sha256_hex(content));
    CHECK(file->size == content.size());
    CHECK(file->etag == etag);
  }
  CHECK_FALSE(fs::exists(result->manifest.snapshot_path / "build" / kCudaVariant));
  CHECK_FALSE(fs::exists(result->manifest.snapshot_path / "README.md"));
  CHECK(slurp(repo / "refs" / "v1") == fx.commit);  // no trailing newline
  CHECK(count_files(repo / "blobs") == expected.size());
  for (const auto& entry : fs::directory_iterator(repo / "blobs")) {
    CHECK(entry.path().extension() != ".incomplete");
  }
}

TEST_CASE("a second fetch of a cached variant downloads no file") {
  FetchFixture fx;
  REQUIRE(fx.fetch());
  CHECK(fx.file_gets() > 0);
  fx.server->reset_requests();
  auto again = fx.fetch();
  REQUIRE(again);
  CHECK(again->manifest.commit == fx.commit);
  CHECK(fx.file_gets() == 0);
  CHECK(again->manifest.files.size() == 5);
}

TEST_CASE("offline mode serves a complete cached snapshot without the server") {
  FetchFixture fx;
  REQUIRE(fx.fetch());
  fx.server->stop();
  auto config = fx.config();
  config.offline = true;
  auto offline = fx.fetch(FetchFixture::request(), config);
  REQUIRE(offline);
  CHECK(offline->manifest.from_cache);
  CHECK(offline->manifest.commit == fx.commit);
  CHECK(offline->manifest.variants == std::vector<std::string>{kCpuVariant});
  CHECK(offline->manifest.files.size() == 5);

  auto missing = FetchFixture::request();
  missing.ref = *fetch::Ref::version(2);
  auto not_cached = fx.fetch(missing, config);
  REQUIRE_FALSE(not_cached);
  CHECK(not_cached.error().code == ErrorCode::offline_not_cached);
  CHECK(not_cached.error().message.find("cached versions: 1") != std::string::npos);
}

TEST_CASE("offline mode reports a damaged cached snapshot instead of serving it") {
  FetchFixture fx;
  REQUIRE(fx.fetch());
  auto config = fx.config();
  config.offline = true;
  const fs::path so =
      repo_dir(fx.cache_root) / "snapshots" / fx.commit / "build" / kCpuVariant / kSoName;
  fs::remove(repo_dir(fx.cache_root) / "blobs" / fs::read_symlink(so).filename());
  auto incomplete = fx.fetch(FetchFixture::request(), config);
  REQUIRE_FALSE(incomplete);
  CHECK(incomplete.error().code == ErrorCode::offline_not_cached);
}

TEST_CASE("offline mode with an empty cache makes no request and says offline_not_cached") {
  FetchFixture fx;
  auto config = fx.config();
  config.offline = true;
  auto result = fx.fetch(FetchFixture::request(), config);
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::offline_not_cached);
  CHECK(fx.server->requests().empty());
}

TEST_CASE("an unreachable Hub falls back to the cached snapshot, else a network error") {
  FetchFixture fx;
  auto revision = FetchFixture::request();
  revision.ref = *fetch::Ref::revision("main");
  REQUIRE(fx.fetch(revision, fx.config()));
  CHECK(slurp(repo_dir(fx.cache_root) / "refs" / "main") == fx.commit);
  fx.server->stop();
  auto cached = fx.fetch(revision, fx.config());
  REQUIRE(cached);
  CHECK(cached->manifest.from_cache);
  auto uncached = fx.fetch(FetchFixture::request(), fx.config());  // refs/v1 was never written
  REQUIRE_FALSE(uncached);
  CHECK(uncached.error().code == ErrorCode::network);
}

TEST_CASE("an untrusted publisher is refused before any request of any kind") {
  FetchFixture fx;
  auto request = FetchFixture::request();
  request.repo = trust::RepoId{"evil-org", "demo-fetch"};
  auto refused = fx.fetch(request, fx.config());
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::untrusted_publisher);
  CHECK(refused.error().message.find("DIFFUSERS_TRUST_REMOTE_KERNELS") != std::string::npos);

  trust::TrustEnvironment disabled;
  disabled.disable_remote_code = true;
  auto off = fx.fetch(FetchFixture::request(), fx.config(), disabled);
  REQUIRE_FALSE(off);
  CHECK(off.error().code == ErrorCode::remote_code_disabled);
  CHECK(fx.server->requests().empty());
  CHECK_FALSE(fs::exists(fx.cache_root));
}

TEST_CASE("versions, revisions and repos that do not exist get typed errors") {
  FetchFixture fx;
  auto request = FetchFixture::request();
  request.ref = *fetch::Ref::version(7);
  auto version = fx.fetch(request, fx.config());
  REQUIRE_FALSE(version);
  CHECK(version.error().code == ErrorCode::version_not_found);
  CHECK(version.error().message.find("available versions: 1") != std::string::npos);

  request.ref = *fetch::Ref::revision("no-such-branch");
  auto revision = fx.fetch(request, fx.config());
  REQUIRE_FALSE(revision);
  CHECK(revision.error().code == ErrorCode::revision_not_found);

  auto repo = FetchFixture::request();
  repo.repo = trust::RepoId{"kernels-community", "missing"};
  auto missing = fx.fetch(repo, fx.config());
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::repo_not_found);
}

TEST_CASE("a commit sha revision writes no ref, a branch revision writes refs/<branch>") {
  FetchFixture fx;
  auto request = FetchFixture::request();
  request.ref = *fetch::Ref::revision(fx.commit);
  auto by_sha = fx.fetch(request, fx.config());
  REQUIRE(by_sha);
  CHECK(by_sha->manifest.commit == fx.commit);
  CHECK_FALSE(fs::exists(repo_dir(fx.cache_root) / "refs" / fx.commit));
  CHECK(fx.server->count("GET", "/revision/") == 0);
}

TEST_CASE("a missing --variant is refused, and --all-variants takes every variant") {
  FetchFixture fx;
  auto request = FetchFixture::request();
  request.variants = *fetch::VariantChoice::named("torch299-cxx11-cpu-x86_64-linux");
  auto missing = fx.fetch(request, fx.config());
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::no_matching_variant);
  CHECK(missing.error().message.find(kCpuVariant) != std::string::npos);
  CHECK(missing.error().message.find(kCudaVariant) != std::string::npos);

  request.variants = fetch::VariantChoice::all();
  auto all = fx.fetch(request, fx.config());
  REQUIRE(all);
  CHECK(all->manifest.variants == std::vector<std::string>{kCpuVariant, kCudaVariant});
  CHECK(fs::exists(all->manifest.snapshot_path / "build" / kCudaVariant / "__init__.py"));
}

TEST_CASE("a platform with no compatible variant gets no_matching_variant") {
  FetchFixture fx;
  auto request = FetchFixture::request();
  request.target_platform->torch_minor = 9;
  auto none = fx.fetch(request, fx.config());
  REQUIRE_FALSE(none);
  CHECK(none.error().code == ErrorCode::no_matching_variant);
  CHECK(fx.file_gets() == 0);
}
