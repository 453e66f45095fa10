// kh_attention_env_probe: a fresh process that reports how the dispatcher read its
// environment (DIFFUSERS_ATTN_BACKEND, DIFFUSERS_ATTN_CHECKS) and what its first calls did.
// semantics_env_test.cpp runs it with the variables set.
#include <iostream>
#include <string>

#include "attention/native_reference.hpp"
#include "kernelhub/attention.hpp"

namespace ka = kernelhub::attention;

namespace {

template <class Call>
std::string outcome(Call call) {
  try {
    call();
    return "ok";
  } catch (const ka::UnknownBackend& e) {
    return std::string("UnknownBackend: ") + e.what();
  } catch (const ka::BackendUnavailable& e) {
    return std::string("BackendUnavailable: ") + e.what();
  } catch (const ka::UnsupportedArgument& e) {
    return std::string("UnsupportedArgument: ") + e.what();
  } catch (const ka::InvalidInput& e) {
    return std::string("InvalidInput: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("other: ") + e.what();
  }
}

}  // namespace

int main() {
  std::cout << "active=" << ka::active_backend() << "\n";
  std::cout << "checks=" << (ka::checks_enabled() ? 1 : 0) << "\n";
  const auto in = kernelhub::testing::random_qkv(1, 3, 5, 2, 2, 64, at::kFloat);
  ka::AttentionOptions masked;
  masked.attn_mask = kernelhub::testing::random_bool_mask({1, 5});
  // The start-up backend serves both dispatch_attention and unset layers.
  std::cout << "dispatch=" << outcome([&] { ka::dispatch_attention(in.q, in.k, in.v, masked); })
            << "\n";
  ka::Attention layer;
  std::cout << "layer=" << outcome([&] { layer(in.q, in.k, in.v, masked); }) << "\n";
  ka::AttentionOptions mixed;
  mixed.backend = "native";
  std::cout << "mixed_dtypes=" << outcome([&] {
    ka::dispatch_attention(in.q, in.k.to(at::kDouble), in.v, mixed);
  }) << "\n";
  return 0;
}
