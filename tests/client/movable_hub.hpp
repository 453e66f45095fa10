// A writable copy of the fixture store served on loopback (`kernelhub publish` can move its
// branches and add commits), and the CLI run against it in-process or through kernelhubd.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "client/daemon_fixture.hpp"

namespace kernelhub::testing {

inline const std::string kMovableRepo = "kernels-community/relu";

struct MovableHub {
  TempDir dir;
  std::filesystem::path store = dir.path() / "store";
  std::unique_ptr<FixtureHub> hub;

  // A copy of `from` (another MovableHub's store: a mirror of it at this moment).
  explicit MovableHub(const std::filesystem::path& from = KH_FIXTURE_HUB) {
    std::filesystem::copy(from, store, std::filesystem::copy_options::recursive);
    hub = std::make_unique<FixtureHub>(store);
  }

  // `kernelhub publish` of kMovableRepo with `args`; the new commit.
  std::string publish(const std::vector<std::string>& args) const {
    std::vector<std::string> full{"publish", "--root", store.string(), "--repo", kMovableRepo};
    full.insert(full.end(), args.begin(), args.end());
    const auto result = run_kernelhub(full);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    std::string commit = result.out;
    while (!commit.empty() && commit.back() == '\n') commit.pop_back();
    REQUIRE(commit.size() == 40);
    return commit;
  }
  std::string point_v1(const std::string& commit) const {
    return publish({"--branch", "v1", "--point-to", commit});
  }
  std::string head(const std::string& branch) const {
    std::string commit = slurp(store / "kernels-community" / "relu" / "refs" / "heads" / branch);
    while (!commit.empty() && (commit.back() == '\n' || commit.back() == ' ')) commit.pop_back();
    return commit;
  }
};

// The CLI against the hub, on `cache` in-process, or through the daemon at `socket`.
struct MovableHubCli {
  const MovableHub& hub;
  std::filesystem::path cache;
  std::optional<std::filesystem::path> socket;
  EnvOverrides extra_env{};

  CommandResult run(const std::vector<std::string>& args) const {
    EnvOverrides env{{"HF_ENDPOINT", hub.hub->endpoint()},
                     {"HF_HUB_CACHE", cache.string()},
                     {"KERNELS_CACHE", ""},
                     {"KERNELHUB_SOCKET", socket ? socket->string() : "/nonexistent.sock"},
                     {"KERNELHUB_REQUIRE_DAEMON", socket ? "1" : ""}};
    for (const auto& [key, value] : extra_env) env[key] = value;
    return run_kernelhub(args, env);
  }
  // A successful `download --json` of kMovableRepo, with its stderr as "stderr".
  nlohmann::json download(const std::vector<std::string>& extra = {"--version", "1"}) const {
    std::vector<std::string> args{"download", kMovableRepo, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run(args);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    auto out = nlohmann::json::parse(result.out);
    out["stderr"] = result.err;
    return out;
  }
};

}  // namespace kernelhub::testing
