// libFuzzer harness: the admin policy TOML. In embedded mode a user names it
// (KERNELHUB_POLICY), so it is untrusted input too. Properties: no crash; every error is
// ErrorCode::policy (the CLI and daemon report nothing else for a bad policy).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernelhub/trust/policy.hpp"

using namespace kernelhub;

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto policy = trust::parse_policy(text, "fuzz.toml");
  if (!policy && policy.error().code != ErrorCode::policy) __builtin_trap();
  if (policy) {
    for (const auto& org : policy->trusted_publishers) {
      if (org.empty()) __builtin_trap();
    }
  }
  return 0;
}
