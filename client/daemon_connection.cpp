#include "daemon_connection.hpp"

#include <poll.h>

#include <array>
#include <chrono>
#include <type_traits>

#include "kernelhub/cache/handout.hpp"
#include "kernelhub/proto/fetch_wire.hpp"
#include "kernelhub_version.hpp"  // kClientName

namespace kernelhub::client {
namespace {

// A daemon answers hello at once; anything slower is not a kernelhubd.
constexpr std::chrono::seconds kHandshakeTimeout{10};

Error protocol_failure(const std::filesystem::path& socket, const std::string& what) {
  return Error{ErrorCode::protocol_error, "kernelhubd on " + socket.string() + ": " + what};
}

// The trust-relevant variables a daemon applies to this client's request.
std::map<std::string, std::string> trust_env(const util::Environment& env) {
  std::map<std::string, std::string> out;
  for (const char* name :
       {"DIFFUSERS_TRUST_REMOTE_KERNELS", "DIFFUSERS_DISABLE_REMOTE_CODE", "HF_HUB_OFFLINE"}) {
    out[name] = env.get(name).value_or("");
  }
  return out;
}

hub::FetchProgress progress_from(const proto::Progress& m) {
  return hub::FetchProgress{m.file, m.bytes_done, m.bytes_total, static_cast<int>(m.files_done),
                            static_cast<int>(m.files_total)};
}

// The final-reply id of any parsed daemon message (nullopt for hello and id-less errors).
std::optional<proto::RequestId> id_of(const proto::Message& message) {
  return std::visit(
      [](const auto& m) -> std::optional<proto::RequestId> {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, proto::Hello>) {
          return std::nullopt;
        } else {
          return m.id;
        }
      },
      message);
}

}  // namespace

DaemonConnection::DaemonConnection(std::filesystem::path socket, UniqueFd fd)
    : socket_(std::move(socket)), fd_(std::move(fd)), reader_(fd_.get()) {}

Result<std::optional<DaemonConnection>> DaemonConnection::connect(
    const std::filesystem::path& socket, bool pipelined) {
  auto fd = proto::connect_unix(socket);
  if (!fd) {
    // network: no socket file, or a stale one nobody listens on, so no daemon on this host.
    if (fd.error().code == ErrorCode::network) return std::optional<DaemonConnection>{};
    return fail(fd.error().code,
                "cannot connect to kernelhubd on " + socket.string() + ": " + fd.error().message);
  }
  DaemonConnection connection(socket, std::move(*fd));
  KH_TRY(connection.handshake(pipelined));
  return std::optional<DaemonConnection>(std::move(connection));
}

Result<void> DaemonConnection::handshake(bool pipelined) {
  if (auto sent = send_hello(); !sent) {
    // A daemon that refuses us (busy, not allowed) may have closed before our hello went
    // out: its error frame says why, better than the broken pipe.
    KH_TRY(read_hello_reply());
    return sent;
  }
  return pipelined ? ok() : read_hello_reply();
}

Result<void> DaemonConnection::send_hello() {
  proto::Hello hello;
  hello.capabilities = {std::string(proto::kCapabilityFds),
                        std::string(proto::kCapabilityProgress)};
  hello.client = std::string(kClientName);
  KH_TRY(proto::send_frame(fd_.get(), proto::to_json(hello)));
  hello_pending_ = true;
  return ok();
}

Result<void> DaemonConnection::read_hello_reply() {
  hello_pending_ = false;
  auto frame = reader_.read(kHandshakeTimeout);
  if (!frame) return fail(protocol_failure(socket_, "no hello: " + frame.error().message));
  if (!*frame) return fail(protocol_failure(socket_, "closed the connection during the handshake"));
  auto reply = proto::parse_message((*frame)->message, proto::Sender::daemon);
  if (!reply) return fail(protocol_failure(socket_, "bad hello: " + reply.error().message));
  if (const auto* error = std::get_if<proto::ErrorReply>(&*reply)) {
    auto refused = proto::to_error(*error);
    refused.message =
        "kernelhubd on " + socket_.string() + " refused the handshake: " + refused.message;
    return fail(std::move(refused));
  }
  const auto* answer = std::get_if<proto::Hello>(&*reply);
  if (!answer) return fail(protocol_failure(socket_, "the first reply is not a hello"));
  if (answer->protocol < 1 || answer->protocol > proto::kProtocolVersion) {
    return fail(
        protocol_failure(socket_, "answered with protocol " + std::to_string(answer->protocol)));
  }
  return ok();
}

Error DaemonConnection::closed_before_answer() const {
  // Nobody accepting on the socket any more: the daemon itself is gone, not just this
  // connection (a daemon that stops in order says shutting_down itself before it closes).
  if (!proto::connect_unix(socket_)) {
    return {ErrorCode::shutting_down,
            "kernelhubd on " + socket_.string() +
                " went away before answering (it stopped, is restarting, or crashed): retry "
                "once it is back"};
  }
  return {ErrorCode::network,
          "kernelhubd on " + socket_.string() + " closed the connection before answering: retry"};
}

bool DaemonConnection::closed_by_daemon() const {
  pollfd p{fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;
}

Result<void> DaemonConnection::reconnect() {
  auto fd = proto::connect_unix(socket_);
  if (!fd)
    return fail(fd.error().code, "cannot reconnect to kernelhubd on " + socket_.string() + ": " +
                                     fd.error().message);
  fd_ = std::move(*fd);
  reader_ = proto::FrameReader(fd_.get());
  used_ = false;
  return handshake(/*pipelined=*/false);
}

Result<DaemonConnection::Reply> DaemonConnection::exchange(nlohmann::json request,
                                                           const hub::ProgressCallback& progress,
                                                           std::span<const int> fds) {
  // A long-lived client (an app holding libkernelhub) may have idled past the daemon's
  // idle_timeout_s: the daemon said so and closed. Start over on a new connection.
  if (used_ && !hello_pending_ && closed_by_daemon()) KH_TRY(reconnect());
  bool answered = false;
  const bool reused = used_;
  auto reply = exchange_once(request, progress, fds, answered);
  // The daemon closed just as we sent: nothing of ours was read, so sending it again on a
  // new connection is safe (every request is idempotent). Only once, only on a reused one.
  if (!reply && reused && !answered &&
      (reply.error().code == ErrorCode::network || reply.error().code == ErrorCode::timeout)) {
    KH_TRY(reconnect());
    reply = exchange_once(std::move(request), progress, fds, answered);
  }
  if (reply) used_ = true;
  return reply;
}

Result<DaemonConnection::Reply> DaemonConnection::exchange_once(
    nlohmann::json request, const hub::ProgressCallback& progress, std::span<const int> fds,
    bool& answered) {
  answered = false;
  const proto::RequestId id = next_id_++;
  request["id"] = id;
  auto sent = proto::send_frame(fd_.get(), request, fds);
  // With a pipelined handshake, a daemon that refused our hello may already have closed the
  // connection: its hello answer says why, better than the failed send.
  if (hello_pending_) KH_TRY(read_hello_reply());
  if (!sent) return fail(sent.error());
  for (;;) {
    KH_TRY_ASSIGN(auto frame, reader_.read());
    if (!frame) return fail(closed_before_answer());
    auto message = proto::parse_message(frame->message, proto::Sender::daemon);
    if (!message) return fail(protocol_failure(socket_, "bad reply: " + message.error().message));
    // An error without an id ends the connection (docs/protocol.md); one with ours ends the
    // request.
    if (const auto* error = std::get_if<proto::ErrorReply>(&*message);
        error && (!error->id || *error->id == id)) {
      answered = error->id.has_value();  // an id-less error is about the connection
      return fail(proto::to_error(*error));
    }
    answered = true;
    if (id_of(*message) != id) {
      return fail(protocol_failure(
          socket_, "unexpected '" + std::string(proto::type_name(*message)) + "' frame"));
    }
    if (const auto* p = std::get_if<proto::Progress>(&*message)) {
      if (progress) progress(progress_from(*p));
      continue;
    }
    return Reply{std::move(*message), std::move(frame->fds)};
  }
}

Result<nlohmann::json> DaemonConnection::call(const proto::Message& request,
                                              std::span<const int> fds) {
  const std::string_view asked = proto::type_name(request);
  const std::string_view expected = asked == "verify"   ? "verified"
                                    : asked == "import" ? "imported"
                                    : asked == "pin"    ? "pins"
                                                        : asked;
  KH_TRY_ASSIGN(auto reply, exchange(proto::to_json(request), {}, fds));
  if (proto::type_name(reply.message) != expected) {
    return fail(protocol_failure(socket_, "expected '" + std::string(expected) + "', got '" +
                                              std::string(proto::type_name(reply.message)) + "'"));
  }
  auto json = proto::to_json(reply.message);
  json.erase("type");
  json.erase("id");
  return json;
}

Result<nlohmann::json> DaemonConnection::import_bundle(int fd, const util::Environment& env) {
  // The descriptor must arrive with the import frame's bytes alone: with a pipelined hello
  // still unanswered, both frames could reach the daemon in one read.
  if (hello_pending_) KH_TRY(read_hello_reply());
  proto::ImportRequest request;
  request.env = trust_env(env);
  const std::array<int, 1> fds{fd};
  KH_TRY_ASSIGN(auto reply, call(request, fds));
  return std::move(reply["repos"]);
}

Result<FetchedKernel> DaemonConnection::fetch(const fetch::Request& request,
                                              const util::Environment& env,
                                              const hub::ProgressCallback& progress,
                                              bool hand_out) {
  KH_TRY_ASSIGN(
      auto reply,
      exchange(proto::to_json(proto::to_wire(request, 0, !hand_out, trust_env(env))), progress));
  auto* fetched = std::get_if<proto::Fetched>(&reply.message);
  if (!fetched) {
    return fail(protocol_failure(
        socket_, "expected 'fetched', got '" + std::string(proto::type_name(reply.message)) + "'"));
  }
  // The manifest's repo may differ from the one asked for: the Hub renamed it, or its
  // kernel-status redirects. The daemon has checked this client's trust for the repo it names.
  FetchedKernel kernel{std::move(fetched->manifest), /*via_daemon=*/true, {}};
  if (!hand_out) return kernel;
  const auto& files = kernel.manifest.files;
  if (!fetched->with_fds || reply.fds.size() != files.size()) {
    return fail(protocol_failure(socket_, "handed out " + std::to_string(reply.fds.size()) +
                                              " descriptors for " + std::to_string(files.size()) +
                                              " files"));
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!reply.fds[i]) return fail(protocol_failure(socket_, "no descriptor for " + files[i].path));
    KH_TRY(cache::check_blob_fd(reply.fds[i].get(), files[i].size, files[i].path));
    kernel.fds.push_back(std::move(reply.fds[i]));
  }
  return kernel;
}

}  // namespace kernelhub::client
