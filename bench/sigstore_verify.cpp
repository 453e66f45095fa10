// The C++ side of bench/sigstore_bench.py: median times, in-process, of verifying one
// variant's Sigstore bundle (verify: bundle parsed and checked against a loaded trusted
// root; full: the trusted root loaded and parsed too, as a one-off verification pays), and
// of judging a verified receipt by the policy (what a warm hand-out adds).
// Usage: kh_sigstore_verify TRUSTED_ROOT BUNDLE ARTIFACT RUNS   -> one JSON line
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernelhub/hub/signature_gate.hpp"
#include "kernelhub/trust/sigstore/verifier.hpp"
#include "kernelhub/util/read_file.hpp"

using namespace kernelhub;
namespace sigstore = trust::sigstore;

namespace {

template <class F>
double median_ns(int runs, F&& body) {
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    samples.push_back(
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s TRUSTED_ROOT BUNDLE ARTIFACT RUNS\n", argv[0]);
    return 2;
  }
  const auto root_text = util::read_small_file(argv[1], 1u << 20);
  const auto bundle = util::read_small_file(argv[2], 1u << 20);
  const auto artifact = util::read_small_file(argv[3], 64u << 20);
  const int runs = std::atoi(argv[4]);
  if (!root_text || !bundle || !artifact || runs <= 0) return 2;
  auto root = sigstore::parse_trusted_root(*root_text);
  if (!root) return 2;
  const auto policy = sigstore::kernels_community_policy();
  bool all_ok = true;
  const double verify = median_ns(runs, [&] {
    all_ok &= sigstore::verify_artifact_bundle(*artifact, *bundle, *root, policy).has_value();
  });
  const double full = median_ns(runs, [&] {
    auto loaded = sigstore::parse_trusted_root(*root_text);
    all_ok &= loaded && sigstore::verify_artifact_bundle(*artifact, *bundle, *loaded, policy);
  });
  // A warm hand-out: the receipt of this verification judged by the default policy.
  trust::SignatureSettings settings;
  settings.mode = trust::SignatureMode::enforce;
  settings.trusted_root = argv[1];
  auto verifier = hub::SignatureVerifier::load(settings);
  if (!verifier) return 2;
  const hub::SignatureReceipt receipt = verifier->verify(
      "torch215-cxx11-cpu-x86_64-linux", "etag", *artifact, std::optional<std::string>(*bundle));
  const auto repo = *trust::RepoId::parse("kernels-community/relu");
  const double decide = median_ns(runs * 100, [&] {
    all_ok &= hub::decide_signature(settings, repo, receipt, std::nullopt).has_value();
  });
  std::printf("{\"ok\": %s, \"verify_ns\": %.0f, \"full_ns\": %.0f, \"decide_ns\": %.0f}\n",
              all_ok ? "true" : "false", verify, full, decide);
  return all_ok ? 0 : 1;
}
