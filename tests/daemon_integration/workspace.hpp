// One test's world: a FixtureHub, a temp dir (traversable by other uids) holding the
// daemon's socket and cache, and the reference manifest of a clean fetch.
#pragma once

#include <sys/stat.h>

#include <map>
#include <string>

#include "daemon_integration/harness.hpp"

namespace kernelhub::testing {

inline const std::string kRelu = "kernels-community/relu";
inline const std::string kRepoFolder = "kernels--kernels-community--relu";
inline const std::string kSage = "SageAttention/relu";

struct Workspace {
  FixtureHub hub;
  TempDir dir;
  std::filesystem::path socket = dir.path() / "kh.sock";
  std::filesystem::path cache = dir.path() / "cache";

  Workspace() { ::chmod(dir.path().c_str(), 0755); }  // other uids must reach the socket

  DaemonConfig config() const {
    DaemonConfig c;
    c.socket = socket;
    c.cache = cache;
    c.hf_endpoint = hub.endpoint();
    return c;
  }

  // path -> sha256 of `repo` vN as a clean daemon on a cache of its own hands it out.
  std::map<std::string, std::string> reference(const std::string& repo = kRelu,
                                               int version = 1) const {
    DaemonConfig c = config();
    c.socket = dir.path() / "reference.sock";
    c.cache = dir.path() / "reference-cache";
    c.log = dir.path() / "reference.log";
    DaemonProcess daemon(c);
    WireClient client(c.socket);
    client.hello();
    auto fetched = client.fetch(repo, version);
    if (fetched.message.value("type", "") != "fetched")
      throw std::runtime_error("reference fetch: " + fetched.message.dump());
    std::map<std::string, std::string> out;
    for (const auto& f : fetched.message.at("files")) out[f.at("path")] = f.at("sha256");
    return out;
  }
};

inline const std::string kKernelhubCli = std::string(KH_BIN_DIR) + "/kernelhub";
// Runs a command as uid/gid 65534 with no supplementary groups (tests run as root in CI).
inline const std::vector<std::string> kAsNobody = {"/usr/bin/setpriv", "--reuid=65534",
                                                   "--regid=65534", "--clear-groups"};

// `kernelhub ARGS` against the workspace's daemon (required) and Hub, with no trust or
// offline variables of the test's own environment; `as_user` is prepended (kAsNobody).
inline CommandResult kernelhub_cli(const std::vector<std::string>& args, const Workspace& ws,
                                   const std::vector<std::string>& as_user = {}) {
  std::vector<std::string> argv = as_user;
  argv.push_back(kKernelhubCli);
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, {{"HF_ENDPOINT", ws.hub.endpoint()},
                            {"KERNELHUB_SOCKET", ws.socket.string()},
                            {"KERNELHUB_REQUIRE_DAEMON", ""},
                            {"DIFFUSERS_TRUST_REMOTE_KERNELS", ""},
                            {"DIFFUSERS_DISABLE_REMOTE_CODE", ""},
                            {"HF_HUB_OFFLINE", ""}});
}

}  // namespace kernelhub::testing
