// How the provider tells an error: what was being done ("flash_hub: cannot use org/name v3"),
// what went wrong, and what the user can do about it (the error table's remedy).
#pragma once

#include <string>

#include "kernelhub/provider/kernel_provider.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::provider {

// "<context>: <message>" and, when there is one, " <fix>"; the code is kept.
Error in_context(Error error, const std::string& context, const std::string& fix = {});

// The fix for a failed hub fetch or load, in the user's terms; empty when the code's remedy
// is none.
std::string hub_fix(const HubKernelSpec& spec, ErrorCode code);

}  // namespace kernelhub::provider
