#include "kernelhub/client/client.hpp"

#include <variant>

#include "daemon_connection.hpp"
#include "embedded.hpp"
#include "kernelhub/variant/variant.hpp"

namespace kernelhub::client {

struct Client::Impl {
  std::variant<EmbeddedBackend, DaemonConnection> backend;
  util::Environment env;
};

std::filesystem::path socket_path(const util::Environment& env, const ClientOptions& options) {
  if (options.socket) return *options.socket;
  if (auto from_env = env.get("KERNELHUB_SOCKET")) return *from_env;
  return kDefaultSocket;
}

Result<Client> Client::open(const util::Environment& env, const ClientOptions& options) {
  const bool require = options.require_daemon || env.is_true("KERNELHUB_REQUIRE_DAEMON");
  if (options.embedded_only && require) {
    return fail(ErrorCode::invalid_argument,
                "embedded mode was asked for while a daemon is required");
  }
  if (!options.embedded_only) {
    const auto socket = socket_path(env, options);
    KH_TRY_ASSIGN(auto connection, DaemonConnection::connect(socket, options.pipelined_handshake));
    if (connection) {
      return Client(std::make_unique<Impl>(Impl{std::move(*connection), env}));
    }
    if (require) {
      return fail(ErrorCode::network,
                  "no kernelhubd is listening on " + socket.string() +
                      ", and a daemon is required (KERNELHUB_REQUIRE_DAEMON=1 or "
                      "--require-daemon); start kernelhubd or set KERNELHUB_SOCKET");
    }
  }
  return Client(std::make_unique<Impl>(Impl{EmbeddedBackend(env, options), env}));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

bool Client::via_daemon() const { return std::holds_alternative<DaemonConnection>(impl_->backend); }

std::string Client::where() const {
  if (const auto* daemon = std::get_if<DaemonConnection>(&impl_->backend))
    return daemon->socket().string();
  return std::get<EmbeddedBackend>(impl_->backend).cache().root().string();
}

namespace {

// The platform is detected here, in the process that will run the kernel, once, for both
// modes: a daemon selects for what it is sent, so both modes select the same variant.
Result<fetch::Request> with_platform(fetch::Request request, const util::Environment& env) {
  if (!request.variants.is_best() || request.target_platform) return request;
  KH_TRY_ASSIGN(request.target_platform, variant::detect_platform(env, request.platform));
  return request;
}

}  // namespace

Result<FetchedKernel> Client::fetch(const fetch::Request& request,
                                    const hub::ProgressCallback& progress) {
  KH_TRY_ASSIGN(auto full, with_platform(request, impl_->env));
  if (auto* daemon = std::get_if<DaemonConnection>(&impl_->backend)) {
    return daemon->fetch(full, impl_->env, progress, /*hand_out=*/true);
  }
  return std::get<EmbeddedBackend>(impl_->backend).fetch(full, progress, /*hand_out=*/true);
}

Result<FetchedKernel> Client::prefetch(const fetch::Request& request,
                                       const hub::ProgressCallback& progress) {
  KH_TRY_ASSIGN(auto full, with_platform(request, impl_->env));
  if (auto* daemon = std::get_if<DaemonConnection>(&impl_->backend)) {
    return daemon->fetch(full, impl_->env, progress, /*hand_out=*/false);
  }
  return std::get<EmbeddedBackend>(impl_->backend).fetch(full, progress, /*hand_out=*/false);
}

Result<nlohmann::json> Client::status() {
  if (auto* daemon = std::get_if<DaemonConnection>(&impl_->backend)) {
    auto reply = daemon->call(proto::StatusRequest{});
    if (reply) (*reply)["mode"] = "daemon";
    return reply;
  }
  return std::get<EmbeddedBackend>(impl_->backend).status();
}

Result<nlohmann::json> Client::ls() {
  if (auto* daemon = std::get_if<DaemonConnection>(&impl_->backend))
    return daemon->call(proto::LsRequest{});
  return std::get<EmbeddedBackend>(impl_->backend).ls();
}

Result<nlohmann::json> Client::verify(std::optional<trust::RepoId> repo) {
  if (auto* daemon = std::get_if<DaemonConnection>(&impl_->backend)) {
    proto::VerifyRequest request;
    if (repo) request.repo = repo->str();
    return daemon->call(request);
  }
  return std::get<EmbeddedBackend>(impl_->backend).verify(repo);
}

Result<nlohmann::json> Client::import_bundle(int fd) {
  if (auto* daemon = std::get_if<DaemonConnection>(&impl_->backend)) {
    return daemon->import_bundle(fd, impl_->env);
  }
  return std::get<EmbeddedBackend>(impl_->backend).import_bundle(fd);
}

Result<nlohmann::json> Client::gc(const GcOptions& options) {
  if (auto* daemon = std::get_if<DaemonConnection>(&impl_->backend)) {
    proto::GcRequest request;
    request.max_size = options.bounds.max_size;
    request.min_free_bytes = options.bounds.min_free_bytes;
    request.min_free_percent = options.bounds.min_free_percent;
    if (options.bounds.max_unused_age)
      request.max_unused_age_s = static_cast<std::uint64_t>(options.bounds.max_unused_age->count());
    request.dry_run = options.dry_run;
    return daemon->call(request);
  }
  return std::get<EmbeddedBackend>(impl_->backend).gc(options);
}

Result<nlohmann::json> Client::pin(const PinOptions& options) {
  if (auto* daemon = std::get_if<DaemonConnection>(&impl_->backend)) {
    return daemon->call(proto::PinRequest{0, "add", options.repo.str(), options.revision,
                                          options.variants, options.source});
  }
  return std::get<EmbeddedBackend>(impl_->backend).pin(options);
}

Result<nlohmann::json> Client::unpin(const trust::RepoId& repo,
                                     std::optional<std::string> revision) {
  if (auto* daemon = std::get_if<DaemonConnection>(&impl_->backend))
    return daemon->call(proto::PinRequest{0, "remove", repo.str(), std::move(revision), {}, ""});
  return std::get<EmbeddedBackend>(impl_->backend).unpin(repo, revision);
}

Result<nlohmann::json> Client::pins() {
  if (auto* daemon = std::get_if<DaemonConnection>(&impl_->backend))
    return daemon->call(proto::PinRequest{0, "list", std::nullopt, std::nullopt, {}, ""});
  return std::get<EmbeddedBackend>(impl_->backend).pins();
}

}  // namespace kernelhub::client
