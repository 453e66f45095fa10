// Rollback protection of version branches, in-process and through kernelhubd: the Hub moving
// v1 back to an older commit or sideways to an unrelated one is refused and the accepted
// commit served (reported on stderr, in --json, `ls --json` and the daemon's counters), the
// state survives a daemon restart, a forward move is accepted, an explicit revision and an
// admin policy that allows rollbacks are honoured, and a commit that fails verification
// never becomes the accepted one.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "client/movable_hub.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;
using nlohmann::json;

namespace {

const std::string kRepo = kMovableRepo;
const fs::path kReluSource = fs::path(KH_FIXTURE_HUB).parent_path() / "src" / "relu-v1";
const fs::path kFolder = "kernels--kernels-community--relu";
using Cli = MovableHubCli;

json accepted_state(const fs::path& cache) {
  return json::parse(std::ifstream(cache / kFolder / ".kernelhub" / "v1.json"));
}

void check_refused(const json& out, const std::string& served) {
  CHECK(out["commit"] == served);
  CHECK(out["refused_move"].is_string());
  CHECK_THAT(out["stderr"].get<std::string>(), Catch::Contains("does not descend from " + served));
}

}  // namespace

TEST_CASE("a version branch only moves forward: back and sideways moves are refused",
          "[cli][daemon][rollback]") {
  MovableHub hub;
  TempDir dir;
  const fs::path cache = dir.path() / "cache";
  std::unique_ptr<DaemonFixture> daemon;
  const bool through_daemon = GENERATE(false, true);
  INFO((through_daemon ? "through kernelhubd" : "in-process"));
  // --resolve-ttl 0: every fetch asks the Hub again, so each move is seen at once.
  const auto start_daemon = [&] {
    daemon.reset();
    daemon = std::make_unique<DaemonFixture>(*hub.hub, cache,
                                             std::vector<std::string>{"--resolve-ttl", "0"});
  };
  if (through_daemon) start_daemon();
  const auto cli = [&] {
    return Cli{hub,
               through_daemon ? dir.path() / "user-cache" : cache,
               through_daemon ? std::optional(daemon->socket()) : std::nullopt,
               {}};
  };

  const std::string a = cli().download()["commit"];
  CHECK(accepted_state(cache)["accepted"] == a);

  // Forward: a new commit on v1 whose parent is the accepted one.
  const std::string b = hub.publish({"--branch", "v1", kReluSource.string()});
  auto out = cli().download();
  CHECK(out["commit"] == b);
  CHECK(out["refused_move"].is_null());
  CHECK(accepted_state(cache)["accepted"] == b);

  // Back to the older commit, then sideways to v2's unrelated one: both refused.
  hub.point_v1(a);
  check_refused(cli().download(), b);
  const std::string unrelated = hub.head("v2");
  hub.point_v1(unrelated);
  check_refused(cli().download(), b);
  CHECK(accepted_state(cache)["accepted"] == b);
  CHECK(accepted_state(cache)["refused"] == unrelated);

  const auto ls = cli().run({"ls", "--json"});
  REQUIRE(ls.exit_code == 0);
  const auto repos = json::parse(ls.out)["repos"];
  const auto relu =
      std::find_if(repos.begin(), repos.end(), [](const json& r) { return r["repo"] == kRepo; });
  REQUIRE(relu != repos.end());
  CHECK((*relu)["refused_moves"] ==
        json::array({{{"ref", "v1"}, {"accepted", b}, {"refused", unrelated}}}));

  if (through_daemon) {
    const auto status = cli().run({"status", "--json"});
    REQUIRE(status.exit_code == 0);
    CHECK(json::parse(status.out)["counters"]["rollbacks_refused"] == 2);
    // A restart keeps the state: the cache holds it, not the process.
    start_daemon();
    check_refused(cli().download(), b);
  }

  // An explicit revision is the user's pin and is honoured.
  CHECK(cli().download({"--revision", unrelated})["commit"] == unrelated);
  CHECK(accepted_state(cache)["accepted"] == b);
}

// A force-push back: v1 returns to an older commit and the accepted one is gone from the Hub.
// The refusal serves the accepted commit from the cache without asking the Hub for it; once
// the cache no longer holds it either, the error says the move was refused and why the
// accepted commit is not available, and nothing claims to serve it.
TEST_CASE("a refused force-push serves the accepted commit from the cache, gone from the Hub",
          "[cli][daemon][rollback]") {
  MovableHub hub;
  TempDir dir;
  const fs::path cache = dir.path() / "cache";
  const bool through_daemon = GENERATE(false, true);
  INFO((through_daemon ? "through kernelhubd" : "in-process"));
  std::unique_ptr<DaemonFixture> daemon;
  if (through_daemon) {
    daemon = std::make_unique<DaemonFixture>(*hub.hub, cache,
                                             std::vector<std::string>{"--resolve-ttl", "0"});
  }
  const Cli cli{hub,
                through_daemon ? dir.path() / "user-cache" : cache,
                through_daemon ? std::optional(daemon->socket()) : std::nullopt,
                {}};
  const std::string a = cli.download()["commit"];
  const std::string b = hub.publish({"--branch", "v1", kReluSource.string()});
  REQUIRE(cli.download()["commit"] == b);

  hub.point_v1(a);
  // Refused, with b no longer in the cache: the Hub, which still has b, serves it.
  fs::remove_all(cache / kFolder / "snapshots" / b);
  const auto again = cli.download();
  CHECK(again["commit"] == b);
  CHECK(again["from_cache"] == false);
  CHECK_THAT(again["refused_move"].get<std::string>(), Catch::Contains("serving " + b));

  REQUIRE(fs::remove(hub.store / "kernels-community" / "relu" / "commits" / (b + ".json")));
  // The fault: the Hub no longer has b.
  const auto gone = cli.run({"download", kRepo, "--revision", b});
  CHECK(gone.exit_code == 4);
  CHECK_THAT(gone.err, Catch::Contains("revision_not_found"));

  const auto out = cli.download();
  CHECK(out["commit"] == b);
  CHECK(out["from_cache"] == true);
  REQUIRE(out["refused_move"].is_string());
  CHECK_THAT(out["refused_move"].get<std::string>(), Catch::Contains("serving " + b));
  CHECK_THAT(out["stderr"].get<std::string>(), Catch::Contains("does not descend from " + b));
  if (through_daemon) {
    const auto status = cli.run({"status", "--json"});
    REQUIRE(status.exit_code == 0);
    CHECK(json::parse(status.out)["counters"]["rollbacks_refused"] == 2);
  }

  // Neither the cache nor the Hub has b: a typed error that says so, exit 4, nothing served.
  fs::remove_all(cache / kFolder / "snapshots" / b);
  const auto failed = cli.run({"download", kRepo, "--version", "1", "--json"});
  CHECK(failed.exit_code == 4);
  CHECK(failed.out.empty());
  CHECK_THAT(failed.err,
             Catch::Contains("revision_not_found") &&
                 Catch::Contains("the move is refused, and " + b + " is not available") &&
                 Catch::Contains("--revision " + a));
  CHECK_THAT(failed.err, !Catch::Contains("serving"));
  CHECK(accepted_state(cache)["accepted"] == b);
}

TEST_CASE("an admin policy may allow version rollbacks", "[cli][rollback]") {
  MovableHub hub;
  TempDir dir;
  const Cli cli{hub, dir.path() / "cache", std::nullopt, {}};
  const std::string a = cli.download()["commit"];
  const std::string unrelated = hub.head("v2");
  hub.point_v1(unrelated);
  std::ofstream(dir.path() / "policy.toml") << "[trust]\nallow_version_rollback = true\n";
  const auto out =
      cli.download({"--version", "1", "--policy", (dir.path() / "policy.toml").string()});
  CHECK(out["commit"] == unrelated);
  CHECK(out["refused_move"].is_null());
  CHECK(accepted_state(dir.path() / "cache")["accepted"] == unrelated);
  CHECK(a != unrelated);
}

TEST_CASE("a commit that fails verification never becomes the accepted one", "[cli][rollback]") {
  MovableHub hub;
  TempDir dir;
  const Cli cli{hub, dir.path() / "cache", std::nullopt, {}};
  const std::string a = cli.download()["commit"];

  // A forward commit whose shared object no longer matches metadata.json's digest.
  const fs::path bad = dir.path() / "bad";
  fs::copy(kReluSource, bad, fs::copy_options::recursive);
  for (const auto& entry : fs::recursive_directory_iterator(bad)) {
    if (entry.path().extension() == ".so") std::ofstream(entry.path(), std::ios::app) << "x";
  }
  const std::string c = hub.publish({"--branch", "v1", bad.string()});
  const auto refused = cli.run({"download", kRepo, "--version", "1"});
  CHECK(refused.exit_code == 7);
  CHECK_THAT(refused.err, Catch::Contains("hash_mismatch"));
  CHECK(accepted_state(dir.path() / "cache")["accepted"] == a);

  // The next good commit descends from the accepted one through the bad one: accepted.
  const std::string d = hub.publish({"--branch", "v1", kReluSource.string()});
  CHECK(cli.download()["commit"] == d);
  CHECK(accepted_state(dir.path() / "cache")["accepted"] == d);
  CHECK(c != d);
}
