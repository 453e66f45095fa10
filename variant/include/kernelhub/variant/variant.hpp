// Build-variant naming and selection, following the `kernels` library's rules
// (research/kernels-library.md §2): parse the folder names under build/, decide which are
// acceptable on this machine, and pick the preferred one.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::variant {

// What this machine can run. Filled by detect_platform(), or by hand in tests.
struct Platform {
  int torch_major = 2;
  int torch_minor = 0;
  bool cxx11_abi = true;
  std::string backend = "cpu";  // "cpu", or a versioned token such as "cu132", "rocm71"
  std::string arch = "x86_64";  // "x86_64" | "aarch64"
  std::string os = "linux";     // "linux" | "darwin" | "windows"

  std::string describe() const;  // e.g. "torch 2.15, cxx11 ABI, cpu, x86_64-linux"
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 takes the defaulted <=> for a 0
  auto operator<=>(const Platform&) const = default;
};

// Explicit choices from flags; each overrides detection.
struct PlatformOverrides {
  std::optional<std::string> torch_version;  // "2.15" or "2.15.0+cu132"
  std::optional<std::string> backend;        // "cpu", "cuda", "cu132"
};

// Torch version: override, else KERNELHUB_TORCH_VERSION, else the torch of $VIRTUAL_ENV, else
// the torch of $KERNELHUB_PYTHON (or python3/python on PATH), read from torch/version.py;
// invalid_argument when there is none. Only clients detect: a daemon selects for the
// platform its client sent.
// Backend: override, else KERNELHUB_BACKEND, else CUDA (torch's CUDA version) only when
// the torch build has CUDA *and* an NVIDIA driver is present, else cpu.
Result<Platform> detect_platform(const util::Environment& env, const PlatformOverrides& overrides);

struct VariantCandidate {
  std::string name;
  bool accepted = false;
  std::string reason;  // why rejected, or "compatible"
};

// Every name ranked: accepted ones first in preference order, then the rejected ones.
std::vector<VariantCandidate> rank_variants(const std::vector<std::string>& names,
                                            const Platform& platform);

// The preferred acceptable variant; no_matching_variant otherwise, with a message that
// lists every variant that exists and why each was rejected.
Result<std::string> select_variant(const std::vector<std::string>& names, const Platform& platform);

}  // namespace kernelhub::variant
