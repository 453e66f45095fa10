#include "connection.hpp"

#include "cache_requests.hpp"

#include "kernelhub/proto/fetch_wire.hpp"

#include <poll.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <type_traits>

#include "kernelhub/cache/cache_json.hpp"
#include "kernelhub/daemon/host_checks.hpp"
#include "kernelhub/proto/transport.hpp"

namespace kernelhub::daemon {

namespace {

const std::vector<std::string> kCapabilities{std::string(proto::kCapabilityFds),
                                             std::string(proto::kCapabilityProgress)};

bool has(const std::vector<std::string>& caps, std::string_view cap) {
  return std::find(caps.begin(), caps.end(), cap) != caps.end();
}

class Session {
 public:
  Session(int fd, const PeerCredentials& peer, ConnectionContext& context, bool fds, bool progress)
      : fd_(fd), peer_(peer), ctx_(context), fds_(fds), progress_(progress) {}

  // false: close the connection. `received`: the descriptors that came with the frame (only
  // an import uses one; the others are closed with the frame).
  bool handle(const proto::Message& message, std::vector<UniqueFd> received) {
    received_ = std::move(received);
    return std::visit([this](const auto& m) { return on(m); }, message);
  }

 private:
  bool reply(const nlohmann::json& frame, std::span<const int> fds = {}) {
    auto sent = proto::send_frame(fd_, frame, fds);
    if (!sent) spdlog::debug("client went away: {}", sent.error().message);
    return static_cast<bool>(sent);
  }
  bool error(const Error& e, proto::RequestId id) {
    send_error(fd_, ctx_.counters, e, id);
    return true;
  }

  bool on(const proto::FetchRequest& request) {
    proto::Progress event;
    event.id = request.id;
    ProgressSink sink;
    if (progress_ || request.prefetch) {
      sink = [&](const hub::FetchProgress& p) {
        event.file = p.current_file;
        event.bytes_done = p.bytes_done;
        event.bytes_total = p.bytes_total;
        event.files_done = static_cast<std::uint64_t>(std::max(p.files_done, 0));
        event.files_total = static_cast<std::uint64_t>(std::max(p.files_total, 0));
        reply(proto::to_json(event));
      };
    }
    ClientContext client;
    client.name = "uid " + std::to_string(peer_.uid) + " (pid " + std::to_string(peer_.pid) + ")";
    auto wanted = proto::from_wire(request);
    if (!wanted) {
      log_unserved(proto::describe_wire(request), client.name, wanted.error());
      return error(wanted.error(), request.id);
    }
    client.trust = client_trust(request.env);
    client.offline = env_true(request.env, "HF_HUB_OFFLINE");
    client.with_fds = fds_ && !request.prefetch;
    client.progress = std::move(sink);
    auto out = ctx_.service.fetch(*wanted, client);
    if (!out) return error(out.error(), request.id);
    std::vector<int> raw(out->fds.size());
    std::transform(out->fds.begin(), out->fds.end(), raw.begin(),
                   [](const UniqueFd& fd) { return fd.get(); });
    const proto::Fetched fetched{request.id, std::move(out->manifest), client.with_fds};
    return reply(proto::to_json(fetched), raw);  // our copies close when `out` goes
  }

  bool on(const proto::StatusRequest& request) {
    return reply(proto::to_json(status_reply(ctx_, request.id)));
  }

  bool on(const proto::LsRequest& request) {
    auto repos = cache::KernelCache(ctx_.cache_root).list();
    if (!repos) return error(repos.error(), request.id);
    return reply(proto::to_json(proto::LsReply{request.id, cache::cached_repos_json(*repos)}));
  }

  bool on(const proto::VerifyRequest& request) {
    std::optional<trust::RepoId> only;
    if (request.repo) {
      auto id = trust::RepoId::parse(*request.repo);
      if (!id) return error({ErrorCode::invalid_request, id.error().message}, request.id);
      only = *id;
    }
    auto report = ctx_.service.verify(only);
    if (!report) return error(report.error(), request.id);
    proto::VerifyReply out{
        request.id, report->blobs.checked, {}, report->receipts.checked, report->receipts.changed};
    for (const auto& c : report->blobs.corrupt) out.corrupt.push_back({c.repo, c.blob, c.reason});
    if (!out.corrupt.empty()) spdlog::warn("verify removed {} corrupt blob(s)", out.corrupt.size());
    return reply(proto::to_json(out));
  }

  bool on(const proto::GcRequest& request) {
    // Bounds of the caller's choosing evict kernels other users run: the import rule.
    if (request.has_bounds() && !request.dry_run && !may_change_cache()) {
      return error(refused_for(peer_.uid,
                               "evict from kernelhubd's cache with explicit bounds "
                               "(plain `kernelhub gc` and --dry-run are open to all)"),
                   request.id);
    }
    cache::EvictionOptions options;
    options.limits = ctx_.service.policy()->cache;
    if (request.has_bounds()) options.limits = gc_bounds(request);
    options.dry_run = request.dry_run;
    auto report = ctx_.service.gc(std::move(options));
    if (!report) return error(report.error(), request.id);
    return reply(proto::to_json(gc_reply(request.id, *report, request.dry_run)));
  }

  bool on(const proto::PinRequest& request) {
    if (request.action != "list" && !may_change_cache()) {
      return error(refused_for(peer_.uid, "change the pins of kernelhubd's cache"), request.id);
    }
    auto outcome = pin_request(ctx_.cache_root, ctx_.service.policy()->cache, request,
                               "uid " + std::to_string(peer_.uid));
    if (!outcome) return error(outcome.error(), request.id);
    return reply(proto::to_json(*outcome));
  }

  bool on(const proto::ImportRequest& request) {
    if (!may_change_cache()) {
      return error(refused_for(peer_.uid, "import bundles into kernelhubd's cache"), request.id);
    }
    if (request.fd >= received_.size() || !received_[request.fd]) {
      return error(
          {ErrorCode::invalid_request, "import names descriptor " + std::to_string(request.fd) +
                                           ", which did not come with the frame"},
          request.id);
    }
    auto repos = ctx_.service.import_bundle(received_[request.fd].get(), request.env);
    if (!repos) return error(repos.error(), request.id);
    return reply(proto::to_json(proto::ImportReply{request.id, std::move(*repos)}));
  }

  bool on(const proto::Hello&) {
    send_error(fd_, ctx_.counters, {ErrorCode::protocol_error, "hello was already exchanged"});
    return true;
  }

  // Imports, pins and gc with bounds change what every user of the host gets: root, or the
  // policy's import_users / import_groups.
  bool may_change_cache() const {
    return trust::peer_may_import(*ctx_.service.policy(), peer_.uid, peer_.gid, peer_.groups);
  }

  // Replies a client must never send (parse_message with Sender::client rejects them).
  template <class T>
  bool on(const T&) {
    send_error(fd_, ctx_.counters, {ErrorCode::unknown_request, "not a request"});
    return true;
  }

  int fd_;
  const PeerCredentials& peer_;
  ConnectionContext& ctx_;
  bool fds_;
  bool progress_;
  std::vector<UniqueFd> received_;
};

// The next frame within the frame bound; a timeout says which bound and where it is set.
Result<std::optional<proto::ReceivedFrame>> read_frame(proto::FrameReader& reader,
                                                       const ConnectionContext& ctx,
                                                       std::string_view what) {
  const auto frame_ms = ctx.bounds.frame_ms.load();
  auto frame = reader.read(std::chrono::milliseconds(frame_ms));
  if (!frame && frame.error().code == ErrorCode::timeout) {
    return fail(ErrorCode::timeout, std::string(what) + " did not arrive whole within " +
                                        std::to_string(frame_ms / 1000) +
                                        " s: closing ([daemon] frame_timeout_s)");
  }
  return frame;
}

// The handshake; nullopt when the connection is to be closed.
std::optional<proto::Negotiated> handshake(int fd, proto::FrameReader& reader,
                                           ConnectionContext& ctx) {
  auto frame = read_frame(reader, ctx, "hello");
  if (!frame) {
    send_error(fd, ctx.counters, frame.error());
    return std::nullopt;
  }
  if (!*frame) return std::nullopt;
  auto message = proto::parse_message((*frame)->message, proto::Sender::client);
  const auto* hello = message ? std::get_if<proto::Hello>(&*message) : nullptr;
  if (hello == nullptr) {
    send_error(fd, ctx.counters, {ErrorCode::protocol_error, "the first frame must be hello"},
               proto::request_id_of((*frame)->message));
    return std::nullopt;
  }
  auto negotiated =
      proto::negotiate(*hello, proto::kProtocolVersion, proto::kProtocolVersion, kCapabilities);
  if (!negotiated) {
    send_error(fd, ctx.counters, negotiated.error());
    return std::nullopt;
  }
  proto::Hello reply{negotiated->protocol, negotiated->capabilities, std::nullopt,
                     std::string(kDaemonName)};
  if (!proto::send_frame(fd, proto::to_json(reply))) return std::nullopt;
  return std::move(*negotiated);
}

// Waits until the client sends something (or closes): true, or false after `idle_ms`.
// FrameReader never reads past the frame it assembles, so nothing of the next request can be
// sitting in its buffer while we poll the socket.
Result<bool> wait_for_request(int fd, std::int64_t idle_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(idle_ms);
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::clamp<std::int64_t>(left, 0, INT32_MAX)));
    if (n > 0) return true;  // data, end of stream, or an error the next read reports
    if (n == 0) return false;
    if (errno != EINTR) return fail(ErrorCode::io, std::string("poll: ") + std::strerror(errno));
  }
}

}  // namespace

proto::StatusReply status_reply(const ConnectionContext& ctx, proto::RequestId id) {
  proto::StatusReply status;
  status.id = id;
  status.daemon = std::string(kDaemonName);
  status.pid = ::getpid();
  status.uptime_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.started).count();
  status.cache_root = ctx.cache_root;
  status.counters = ctx.counters.snapshot();
  // Free space changes with every writer on the file system: read now, not at the last pass.
  if (const auto space = cache::file_system_space(ctx.cache_root))
    status.counters.cache_free_bytes = space->free_bytes;
  return status;
}

void send_error(int socket_fd, AtomicCounters& counters, const Error& error,
                std::optional<proto::RequestId> id) {
  counters.count_error(error.code);
  (void)proto::send_frame(socket_fd, proto::to_json(proto::to_error_reply(error, id)));
}

void serve_connection(int fd, const PeerCredentials& peer, ConnectionContext& ctx) {
  if (!trust::peer_allowed(*ctx.service.policy(), peer.uid, peer.gid, peer.groups)) {
    spdlog::info("refused uid {} gid {} (pid {}): not allowed by the policy", peer.uid, peer.gid,
                 peer.pid);
    send_error(fd, ctx.counters,
               {ErrorCode::permission_denied,
                "uid " + std::to_string(peer.uid) +
                    " may not use kernelhubd (ask the admin: [daemon] allow_users)"});
    return;
  }
  proto::FrameReader reader(fd);
  auto negotiated = handshake(fd, reader, ctx);
  if (!negotiated) return;
  Session session(fd, peer, ctx, has(negotiated->capabilities, proto::kCapabilityFds),
                  has(negotiated->capabilities, proto::kCapabilityProgress));
  for (;;) {
    const auto idle_ms = ctx.bounds.idle_ms.load();
    auto ready = wait_for_request(fd, idle_ms);
    if (!ready) return;
    if (!*ready) {
      // Not an error: a long-lived client simply reconnects on its next request.
      spdlog::debug("closing a connection of uid {} idle for {} ms", peer.uid, idle_ms);
      (void)proto::send_frame(
          fd, proto::to_json(proto::to_error_reply(
                  {ErrorCode::timeout, "no request for " + std::to_string(idle_ms / 1000) +
                                           " s: kernelhubd closed this idle connection (clients "
                                           "reconnect; [daemon] idle_timeout_s)"},
                  std::nullopt)));
      return;
    }
    // The first byte is in (or the end of stream): the rest of the frame has frame_ms.
    auto frame = read_frame(reader, ctx, "a request");
    if (!frame) {  // broken framing: the stream is out of sync, say why and hang up
      send_error(fd, ctx.counters, frame.error());
      return;
    }
    if (!*frame) return;  // clean close
    const auto id = proto::request_id_of((*frame)->message);
    ctx.counters.requests.fetch_add(1, std::memory_order_relaxed);
    if (ctx.stopping.load()) {
      send_error(fd, ctx.counters,
                 {ErrorCode::shutting_down, "kernelhubd is stopping; retry shortly"}, id);
      return;
    }
    auto message = proto::parse_message((*frame)->message, proto::Sender::client);
    if (!message) {
      send_error(fd, ctx.counters, message.error(), id);
      continue;  // unknown_request / invalid_request: the stream itself is fine
    }
    if (!session.handle(*message, std::move((*frame)->fds))) return;
  }
}

}  // namespace kernelhub::daemon
