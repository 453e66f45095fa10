// Handshake settlement and the Error <-> error-frame mapping.
#include <algorithm>

#include "kernelhub/proto/messages.hpp"

namespace kernelhub::proto {

Result<Negotiated> negotiate(const Hello& client, int daemon_min, int daemon_max,
                             const std::vector<std::string>& daemon_caps) {
  if (client.protocol < 1 || client.protocol < daemon_min)
    return fail(ErrorCode::unsupported_protocol,
                "client speaks protocol " + std::to_string(client.protocol) +
                    ", this daemon speaks " + std::to_string(daemon_min) + ".." +
                    std::to_string(daemon_max));
  Negotiated settled;
  settled.protocol = std::min(client.protocol, daemon_max);
  for (const auto& cap : client.capabilities) {
    const bool shared = std::find(daemon_caps.begin(), daemon_caps.end(), cap) != daemon_caps.end();
    const bool seen = std::find(settled.capabilities.begin(), settled.capabilities.end(), cap) !=
                      settled.capabilities.end();
    if (shared && !seen) settled.capabilities.push_back(cap);
  }
  return settled;
}

ErrorReply to_error_reply(const Error& error, std::optional<RequestId> id) {
  return ErrorReply{id, std::string(to_string(error.code)), error.message};
}

Error to_error(const ErrorReply& reply) {
  if (auto code = error_code_from_string(reply.code)) return Error{*code, reply.message};
  return Error{ErrorCode::protocol_error,
               "peer sent unknown error code '" + reply.code + "': " + reply.message};
}

}  // namespace kernelhub::proto
