// libFuzzer harness: a Sigstore bundle (metadata.json.sigstore, fetched from the Hub or a
// mirror) through parsing and every verification check, against a throw-away trusted root
// whose valid bundles over a fixed artifact are the seeds (tests/trust/sigstore/
// make_fuzz_seeds.py). Properties: no crash, leak or sanitizer report; a bundle that
// verifies names the identity the seeds were signed with.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kernelhub/trust/sigstore/pinned_roots.hpp"
#include "kernelhub/trust/sigstore/verifier.hpp"
#include "kernelhub/util/read_file.hpp"

using namespace kernelhub::trust;

namespace {

constexpr std::string_view kArtifact = "kernelhub sigstore fuzz artifact\n";

const sigstore::TrustedRoot& fuzz_root() {
  static const sigstore::TrustedRoot kRoot = [] {
    auto loaded = sigstore::load_trusted_root_setting(std::string(KH_SOURCE_DIR) +
                                                      "/fuzz/sigstore_trusted_root.json");
    if (!loaded) std::abort();  // the harness is unusable without its root
    return std::move(*loaded);
  }();
  return kRoot;
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto policy = sigstore::kernels_community_policy();
  const auto verified = sigstore::verify_artifact_bundle(kArtifact, input, fuzz_root(), policy);
  if (verified && verified->identity.source_repository != policy.source_repository) std::abort();
  return 0;
}
