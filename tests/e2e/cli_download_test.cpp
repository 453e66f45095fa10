// `kernelhub download` and `kernelhub ls` end to end: real binaries, the fixture store served
// by `kernelhub serve` on loopback, the cache checked file by file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "e2e/e2e_support.hpp"
#include "kernelhub/trust/digest.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;
using nlohmann::json;

namespace {

const fs::path kRepoFolder = "kernels--kernels-community--relu";

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json download_json(const FixtureHub& hub, const fs::path& cache,
                   const std::vector<std::string>& extra) {
  std::vector<std::string> args{"download", "kernels-community/relu", "--cache-dir", cache.string(),
                                "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto result = run_kernelhub(args, {{"HF_ENDPOINT", hub.endpoint()}});
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  return json::parse(result.out);
}

// Every file of the fixture's variant is in the snapshot as a relative symlink to
// blobs/<etag>, where the etag is the sha256 for LFS files (.so) and the git blob sha1
// otherwise, and the bytes equal the published source.
void check_snapshot_matches_source(const fs::path& cache, const json& result,
                                   const fs::path& source_variant) {
  const std::string commit = result.at("commit");
  const fs::path repo_dir = cache / kRepoFolder;
  const fs::path variant_dir = repo_dir / "snapshots" / commit / "build" / kVariant;
  REQUIRE(fs::path(result.at("path").get<std::string>()) == variant_dir);

  std::size_t checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(source_variant)) {
    if (!entry.is_regular_file()) continue;
    const auto rel = fs::relative(entry.path(), source_variant);
    const fs::path link = variant_dir / rel;
    INFO("file " << rel.string());
    REQUIRE(fs::is_symlink(link));
    const fs::path target = fs::read_symlink(link);
    REQUIRE(target.is_relative());
    const std::string etag = target.filename();
    REQUIRE(fs::equivalent(link.parent_path() / target, repo_dir / "blobs" / etag));
    const bool lfs = entry.path().extension() == ".so";
    const auto expected_etag = lfs ? kernelhub::trust::sha256_file_hex(entry.path())
                                   : kernelhub::trust::git_blob_sha1_file_hex(entry.path());
    REQUIRE(expected_etag);
    CHECK(etag == *expected_etag);
    CHECK(read_all(link) == read_all(entry.path()));
    ++checked;
  }
  CHECK(checked >= 4);  // __init__.py, _ops.py, the .so, metadata.json
  CHECK(result.at("files").size() == checked);
  for (const auto& blob : fs::directory_iterator(repo_dir / "blobs")) {
    CHECK(blob.path().extension() != ".incomplete");
  }
}

}  // namespace

TEST_CASE("download v1 and v2 into an HF-compatible cache, file by file", "[e2e][download]") {
  FixtureHub hub;
  TempDir cache;
  const json v1 = download_json(hub, cache.path(), {"--version", "1"});
  const json v2 = download_json(hub, cache.path(), {"--version", "2"});

  REQUIRE(std::regex_match(v1.at("commit").get<std::string>(), std::regex("[0-9a-f]{40}")));
  CHECK(v1.at("commit") != v2.at("commit"));
  check_snapshot_matches_source(cache.path(), v1,
                                fs::path(KH_FIXTURE_SRC) / "relu-v1" / "build" / kVariant);
  check_snapshot_matches_source(cache.path(), v2,
                                fs::path(KH_FIXTURE_SRC) / "relu-v2" / "build" / kVariant);

  // refs/vN hold the commit with no trailing newline (huggingface_hub reads them unstripped).
  CHECK(read_all(cache.path() / kRepoFolder / "refs" / "v1") == v1.at("commit").get<std::string>());
  CHECK(read_all(cache.path() / kRepoFolder / "refs" / "v2") == v2.at("commit").get<std::string>());
}

TEST_CASE("a cached kernel is re-resolved without downloading, and offline without any request",
          "[e2e][download][offline]") {
  FixtureHub hub;
  TempDir cache;
  const json first = download_json(hub, cache.path(), {"--version", "1"});
  hub.reset_requests();

  const json again = download_json(hub, cache.path(), {"--version", "1"});
  CHECK(again.at("path") == first.at("path"));
  CHECK(hub.count("GET", "/resolve/") == 0);
  CHECK(hub.count("GET", "/lfs") == 0);

  hub.reset_requests();
  const auto offline = run_kernelhub({"download", "kernels-community/relu", "--version", "1",
                                      "--cache-dir", cache.path().string(), "--json"},
                                     {{"HF_ENDPOINT", hub.endpoint()}, {"HF_HUB_OFFLINE", "1"}});
  INFO(offline.err);
  REQUIRE(offline.exit_code == 0);
  CHECK(json::parse(offline.out).at("path") == first.at("path"));
  CHECK(hub.total_requests() == 0);

  const auto offline_v2 = run_kernelhub({"download", "kernels-community/relu", "--version", "2",
                                         "--cache-dir", cache.path().string()},
                                        {{"HF_ENDPOINT", hub.endpoint()}, {"HF_HUB_OFFLINE", "1"}});
  CHECK(offline_v2.exit_code != 0);
  CHECK(hub.total_requests() == 0);
}

TEST_CASE("ls lists cached repos, revisions, variants and sizes", "[e2e][ls]") {
  FixtureHub hub;
  TempDir cache;
  const json v1 = download_json(hub, cache.path(), {"--version", "1"});
  const json v2 = download_json(hub, cache.path(), {"--version", "2"});

  const auto ls = run_kernelhub({"ls", "--cache-dir", cache.path().string(), "--json"});
  INFO(ls.err);
  REQUIRE(ls.exit_code == 0);
  const std::string text = ls.out;
  CHECK(text.find("kernels-community/relu") != std::string::npos);
  CHECK(text.find(v1.at("commit").get<std::string>()) != std::string::npos);
  CHECK(text.find(v2.at("commit").get<std::string>()) != std::string::npos);
  CHECK(text.find(kVariant) != std::string::npos);

  const auto table = run_kernelhub({"ls", "--cache-dir", cache.path().string()});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("kernels-community/relu") != std::string::npos);
}

TEST_CASE("download failures exit non-zero with a one-line reason", "[e2e][errors]") {
  FixtureHub hub;
  TempDir cache;
  const auto run = [&](std::vector<std::string> args, EnvOverrides env = {}) {
    args.insert(args.begin(), "download");
    args.insert(args.end(), {"--cache-dir", cache.path().string()});
    env.try_emplace("HF_ENDPOINT", hub.endpoint());
    return run_kernelhub(args, env);
  };
  const auto one_line = [](const CommandResult& r) {
    return !r.err.empty() && r.err.find('\n') == r.err.size() - 1;
  };

  const auto unknown_version = run({"kernels-community/relu", "--version", "7"});
  CHECK(unknown_version.exit_code != 0);
  CHECK(one_line(unknown_version));
  CHECK(unknown_version.err.find("1, 2") != std::string::npos);

  const auto unknown_revision = run({"kernels-community/relu", "--revision", "no-such-branch"});
  CHECK(unknown_revision.exit_code != 0);
  CHECK(one_line(unknown_revision));

  const auto unknown_repo = run({"kernels-community/no-such-kernel", "--version", "1"});
  CHECK(unknown_repo.exit_code != 0);
  CHECK(one_line(unknown_repo));

  const auto bad_variant = run({"kernels-community/relu", "--version", "1", "--variant",
                                "torch99-cxx11-cu999-x86_64-linux"});
  CHECK(bad_variant.exit_code != 0);
  CHECK(one_line(bad_variant));
  CHECK(bad_variant.err.find(kVariant) != std::string::npos);  // lists what exists

  const auto no_platform_match =
      run({"kernels-community/relu", "--version", "1", "--torch-version", "2.3"});
  CHECK(no_platform_match.exit_code != 0);
  CHECK(no_platform_match.err.find(kVariant) != std::string::npos);

  // Nothing listens on port 9 of loopback: a network failure with no cached copy.
  const auto no_network =
      run({"kernels-community/relu", "--version", "1"},
          {{"HF_ENDPOINT", "http://127.0.0.1:9"}, {"KERNELHUB_RETRY_BASE_MS", "1"}});
  CHECK(no_network.exit_code != 0);
  CHECK(one_line(no_network));

  const auto both = run({"kernels-community/relu", "--version", "1", "--revision", "v1"});
  CHECK(both.exit_code != 0);

  // Every failure above left nothing published.
  CHECK_FALSE(fs::exists(cache.path() / kRepoFolder / "refs"));
}
