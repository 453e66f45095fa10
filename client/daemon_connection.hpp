// Daemon mode: one connection to kernelhubd, handshake done, requests sent one at a time
// (docs/protocol.md). Replies are matched to requests by id; `error` replies become typed
// Errors; received descriptors are checked before they are handed on. A connection the
// daemon closed between requests (its idle timeout, a restart) is replaced transparently.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>

#include "kernelhub/client/client.hpp"
#include "kernelhub/hub/fetcher.hpp"
#include "kernelhub/proto/messages.hpp"
#include "kernelhub/proto/transport.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::client {

class DaemonConnection {
 public:
  // nullopt when nobody listens (no socket file, or connection refused): the caller may fall
  // back to embedded mode. An error when something answered but the handshake failed.
  // `pipelined`: send hello without waiting; its reply is checked before the first request's.
  static Result<std::optional<DaemonConnection>> connect(const std::filesystem::path& socket,
                                                         bool pipelined = false);

  const std::filesystem::path& socket() const { return socket_; }

  // fetch (hand_out) or prefetch; `env` supplies the client's trust-relevant variables.
  Result<FetchedKernel> fetch(const fetch::Request& request, const util::Environment& env,
                              const hub::ProgressCallback& progress, bool hand_out);
  // status/ls/verify/gc: the typed reply, as JSON without type/id.
  // The bundle open on `fd` travels with the request; the reply's repos.
  Result<nlohmann::json> import_bundle(int fd, const util::Environment& env);
  // `fds` go with the request (an import's bundle).
  Result<nlohmann::json> call(const proto::Message& request, std::span<const int> fds = {});

 private:
  DaemonConnection(std::filesystem::path socket, UniqueFd fd);
  // hello, and unless `pipelined` its answer.
  Result<void> handshake(bool pipelined);
  Result<void> send_hello();
  Result<void> read_hello_reply();
  struct Reply {
    proto::Message message;
    std::vector<UniqueFd> fds;
  };
  // Sends `request` under the next id and reads until its final frame: an `error` becomes a
  // typed Error, progress frames go to `progress`, anything else is returned with its fds.
  Result<Reply> exchange(nlohmann::json request, const hub::ProgressCallback& progress,
                         std::span<const int> fds = {});
  // One attempt; `answered`: a frame of this request arrived (then it is never resent).
  Result<Reply> exchange_once(nlohmann::json request, const hub::ProgressCallback& progress,
                              std::span<const int> fds, bool& answered);
  // Anything readable between requests means the daemon closed (it never speaks unasked).
  bool closed_by_daemon() const;
  // The error for an end of stream before a request's answer: shutting_down when the daemon
  // no longer accepts connections, else network.
  Error closed_before_answer() const;
  // A fresh connection and handshake on the same socket.
  Result<void> reconnect();

  std::filesystem::path socket_;
  UniqueFd fd_;
  proto::FrameReader reader_;
  proto::RequestId next_id_ = 1;
  bool hello_pending_ = false;  // hello sent, its reply not read yet (pipelined handshake)
  bool used_ = false;           // a request was answered on this connection
};

}  // namespace kernelhub::client
