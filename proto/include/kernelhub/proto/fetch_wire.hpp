// A fetch request in its frame form (docs/protocol.md) and back: proto converts, the fetch
// vocabulary (kernelhub/fetch/request.hpp) decides what is valid.
#pragma once

#include <map>
#include <string>

#include "kernelhub/fetch/request.hpp"
#include "kernelhub/proto/messages.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::proto {

// The frame of `request`: with its target platform when it has one (the client's own, so the
// daemon selects for that process), else the platform flags as given.
FetchRequest to_wire(const fetch::Request& request, RequestId id, bool prefetch,
                     std::map<std::string, std::string> env);

// The request a frame asks for; invalid_request saying what is wrong. The platform is rebuilt
// only when the best variant is asked for and the frame names a torch version and a backend
// (clients from before the platform fields sent only those: arch and OS are then this host's,
// as a unix socket never crosses kernels, and the cxx11 ABI torch's Linux default).
Result<fetch::Request> from_wire(const FetchRequest& m);

// What a frame asks for, as sent, for the log: "org/name v1" or "org/name @main".
std::string describe_wire(const FetchRequest& m);

}  // namespace kernelhub::proto
