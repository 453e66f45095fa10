// `kernelhub bundle import` into kernelhubd's shared cache: the client passes the open bundle
// as a descriptor; root may import, another uid only when the admin policy names it; the
// imported kernel is then served by the daemon like a fetched one, read-only, and a hostile
// bundle leaves the daemon's cache untouched and the daemon serving.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <thread>

#include "daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
using nlohmann::json;
namespace fs = std::filesystem;

TEST_CASE("bundle import through kernelhubd: the fd travels, the policy decides who may",
          "[daemon][bundle]") {
  REQUIRE(::geteuid() == 0);  // acts as another uid below; CI runs as root
  REQUIRE(fs::exists("/usr/bin/setpriv"));
  Workspace ws;
  const fs::path bundle = ws.dir.path() / "relu.tar.zst";
  const auto created =
      kernelhub_cli({"bundle", "create", bundle.string(), kRelu, "--version", "1", "--variant",
                     KH_FIXTURE_VARIANT, "--cache-dir", (ws.dir.path() / "online-cache").string()},
                    ws);
  INFO(created.err);
  REQUIRE(created.exit_code == 0);
  ::chmod(bundle.c_str(), 0644);

  const fs::path policy = ws.dir.path() / "policy.toml";
  std::ofstream(policy) << "[daemon]\n";
  DaemonConfig config = ws.config();
  config.policy = policy;
  DaemonProcess daemon(config);

  // Another uid, not named by the policy: refused, nothing written.
  auto refused = kernelhub_cli({"bundle", "import", bundle.string()}, ws, kAsNobody);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.err, Catch::Contains("permission_denied") && Catch::Contains("import_users"));
  CHECK_FALSE(fs::exists(ws.cache / kRepoFolder));

  // A hostile bundle from root: typed error, the daemon's cache untouched, the daemon serving.
  const fs::path garbage = ws.dir.path() / "garbage.tar.zst";
  std::ofstream(garbage) << std::string(1000, 'x');
  auto bad = kernelhub_cli({"bundle", "import", garbage.string()}, ws);
  CHECK(bad.exit_code == 7);
  CHECK_THAT(bad.err, Catch::Contains("malformed_response"));
  CHECK_FALSE(fs::exists(ws.cache / kRepoFolder));

  // Root imports: published into the daemon's cache, read-only, then served offline.
  auto imported = kernelhub_cli({"bundle", "import", bundle.string(), "--json"}, ws);
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  const auto repos = json::parse(imported.out);
  REQUIRE(repos.size() == 1);
  CHECK(repos[0]["refs_written"] == json::array({"v1"}));
  CHECK(repos[0]["snapshot"].get<std::string>().rfind(ws.cache.string(), 0) == 0);
  for (const auto& entry : fs::directory_iterator(ws.cache / kRepoFolder / "blobs")) {
    struct stat st {};
    REQUIRE(::stat(entry.path().c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0444);
  }
  WireClient client(ws.socket);
  client.hello();
  auto served = client.fetch(kRelu, 1, {{"HF_HUB_OFFLINE", "1"}});
  REQUIRE(served.message.at("type") == "fetched");
  CHECK(served.message.at("commit") == repos[0]["commit"]);

  // The admin names uid 65534 and reloads: now it may import (the same bundle again).
  std::ofstream(policy) << "[daemon]\nimport_users = [65534]\n";
  daemon.child().signal(SIGHUP);
  CommandResult allowed;
  for (int i = 0; i < 100; ++i) {  // the reload is asynchronous
    allowed = kernelhub_cli({"bundle", "import", bundle.string()}, ws, kAsNobody);
    if (allowed.exit_code == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  INFO(allowed.err << daemon.log());
  CHECK(allowed.exit_code == 0);
}
