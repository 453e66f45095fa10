// The c10 dispatcher's view of one ops namespace, without torch headers for the caller.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kernelhub::loader::detail {

// "<namespace>::<op>" names registered in the dispatcher, sorted.
std::vector<std::string> registered_ops(std::string_view ops_namespace);

}  // namespace kernelhub::loader::detail
