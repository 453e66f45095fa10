// LOCAL_KERNELS, the `kernels` library's override of hub kernels by local builds, and the
// version comparison for the local libraries' pins.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "kernelhub/util/result.hpp"

namespace kernelhub::provider {

using LocalKernels = std::map<std::string, std::string, std::less<>>;

// LOCAL_KERNELS="key=path:key2=path2" (the `kernels` library's format). Keys are Hub repo
// ids ("kernels-community/flash-attn2") or library names ("flash-attn"). A malformed entry is
// invalid_argument naming the entry.
Result<LocalKernels> parse_local_kernels(std::string_view value);

// Version comparison in the spirit of PEP 440 for release numbers with an optional
// pre-release tail: "2.8.3" >= "2.6.3", "3.0.0b1" < "3.0.0", "0.0.32" >= "0.0.29".
bool version_at_least(std::string_view have, std::string_view need);

}  // namespace kernelhub::provider
