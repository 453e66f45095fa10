// kernelhub::client::Client: how apps and the CLI get kernels. It talks to the host's
// kernelhubd when one answers on the socket (daemon mode) and otherwise runs the same fetch
// pipeline in-process against the user's cache (embedded mode). Both modes hand back the
// same thing: the verified manifest plus one read-only fd per file, opened without following
// symlinks, so a loader never re-resolves a path that someone could swap.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelhub/hub/fetcher.hpp"
#include "kernelhub/hub/progress.hpp"
#include "kernelhub/trust/cache_settings.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::client {

inline constexpr const char* kDefaultSocket = "/run/kernelhub/kernelhub.sock";

struct ClientOptions {
  // Default: $KERNELHUB_SOCKET, else kDefaultSocket.
  std::optional<std::filesystem::path> socket;
  // Fail instead of falling back to embedded mode (also KERNELHUB_REQUIRE_DAEMON=1).
  bool require_daemon = false;
  // Never try the daemon (the CLI's explicit --cache-dir); conflicts with require_daemon.
  bool embedded_only = false;
  // Embedded mode only: cache root (default: resolve_cache_root) and admin policy file
  // (default: $KERNELHUB_POLICY). The daemon uses its own.
  std::optional<std::filesystem::path> cache_dir;
  std::optional<std::filesystem::path> policy_file;
  // Send hello and let the first request follow it at once, reading the daemon's hello
  // reply only then: one round trip less for a one-shot fetch (a Unix-socket round trip
  // costs tens of microseconds). A daemon that refuses the handshake is then reported by
  // that first request instead of by open().
  bool pipelined_handshake = false;
};

// A fetch as an app receives it: the manifest (the verified files' paths, sizes and sha256;
// notes for the user) and an open descriptor per file.
struct FetchedKernel {
  fetch::Manifest manifest;  // manifest.snapshot_path is snapshots/<commit> (Python interop)
  bool via_daemon = false;
  // fds[i] is manifest.files[i]'s: O_RDONLY, a regular file of its size; none after prefetch.
  std::vector<UniqueFd> fds;
};

// The socket a client would use: options.socket, else $KERNELHUB_SOCKET, else the default.
std::filesystem::path socket_path(const util::Environment& env, const ClientOptions& options);

// `kernelhub gc`: bounds given here win over the admin policy's [cache] (kernelhubd's, or in
// embedded mode the --policy / KERNELHUB_POLICY file's). Through kernelhubd, explicit bounds
// follow the import rule; dry_run removes nothing.
struct GcOptions {
  trust::CacheSettings bounds;
  bool dry_run = false;
};

// `kernelhub pin`: a commit, or a ref the cache holds; no variants: every variant.
struct PinOptions {
  trust::RepoId repo;
  std::string revision;
  std::vector<std::string> variants;
  std::string source;
};

class Client {
 public:
  // Connects and shakes hands when a daemon listens; a missing socket or a refused
  // connection means embedded mode unless a daemon is required. A socket that accepts but
  // does not speak the protocol is an error, never a silent fallback.
  static Result<Client> open(const util::Environment& env, const ClientOptions& options = {});

  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  ~Client();

  bool via_daemon() const;
  // The socket path (daemon mode) or cache root (embedded mode), for messages.
  std::string where() const;

  // Resolve, trust-check, download if needed, verify; hands out an fd per file.
  Result<FetchedKernel> fetch(const fetch::Request& request,
                              const hub::ProgressCallback& progress = {});
  // The same pipeline for warming the cache; no fds are handed out.
  Result<FetchedKernel> prefetch(const fetch::Request& request,
                                 const hub::ProgressCallback& progress = {});

  // Replies as in docs/protocol.md (the `type` and `id` members removed). Embedded status
  // is {"mode":"embedded","cache_root":...}; daemon status gains "mode":"daemon".
  Result<nlohmann::json> status();
  Result<nlohmann::json> ls();
  Result<nlohmann::json> verify(std::optional<trust::RepoId> repo = std::nullopt);
  Result<nlohmann::json> gc(const GcOptions& options = {});
  // Pins: each reply is {"repos": cache::pins_listing_json, "removed": n}.
  Result<nlohmann::json> pin(const PinOptions& options);
  Result<nlohmann::json> unpin(const trust::RepoId& repo, std::optional<std::string> revision);
  Result<nlohmann::json> pins();
  // Verifies the bundle open on `fd` and publishes it: into kernelhubd's cache (the fd is
  // passed over the socket; the admin policy says who may), else into the embedded cache.
  // The reply is an array as in cache::bundle::imported_json.
  Result<nlohmann::json> import_bundle(int fd);

  struct Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kernelhub::client
