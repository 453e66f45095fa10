// Acceptance and ranking of build variants, matching the `kernels` resolver
// (research/kernels-library.md §2.1 rules, §2.2 order).
#include "kernelhub/variant/variant.hpp"

#include <algorithm>
#include <array>
#include <set>

#include "kernelhub/variant/variant_name.hpp"

namespace kernelhub::variant {
namespace {

std::string version_str(int major, int minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// The backend this platform selects; a token we cannot parse is kept opaque so it can
// still match variants that spell it the same way.
BackendToken platform_backend(const Platform& platform) {
  if (auto parsed = parse_backend_token(platform.backend)) return *parsed;
  return BackendToken{platform.backend, platform.backend, false, 0, 0};
}

// Empty when acceptable, else why not.
std::string arch_rejection(const ParsedVariant& v, const Platform& p,
                           const BackendToken& selected) {
  if (v.cpu != p.arch) return "built for CPU " + v.cpu + ", this machine is " + p.arch;
  if (v.os != p.os) return "built for OS " + v.os + ", this machine runs " + p.os;
  const std::string torch = version_str(p.torch_major, p.torch_minor);
  switch (v.framework) {
    case Framework::torch:
      if (v.major != p.torch_major || v.minor != p.torch_minor) {
        return "built for torch " + version_str(v.major, v.minor) +
               ", this environment has torch " + torch;
      }
      // The ABI flag only exists on Linux; elsewhere any tagged build is unusable.
      if (v.cxx11_abi && (p.os != "linux" || *v.cxx11_abi != p.cxx11_abi)) {
        if (p.os != "linux") return "ABI-tagged builds are only loadable on linux";
        return std::string("built with the ") + (*v.cxx11_abi ? "cxx11" : "pre-cxx11 (cxx98)") +
               " ABI, this torch uses the " + (p.cxx11_abi ? "cxx11" : "pre-cxx11") + " ABI";
      }
      break;
    case Framework::torch_stable_abi:
      if (std::pair{v.major, v.minor} > std::pair{p.torch_major, p.torch_minor}) {
        return "stable ABI " + version_str(v.major, v.minor) +
               " needs torch >= " + version_str(v.major, v.minor) +
               ", this environment has torch " + torch;
      }
      break;
    case Framework::tvm_ffi:
      return "tvm-ffi build: kernelhub loads torch extensions only and has no tvm-ffi runtime";
    case Framework::noarch:
      break;
  }
  if (selected.family == "cuda" && v.backend.family == "cuda") {
    if (v.backend.major != selected.major || v.backend.minor > selected.minor) {
      return "built for CUDA " + version_str(v.backend.major, v.backend.minor) +
             ", this machine has CUDA " + version_str(selected.major, selected.minor) +
             " (needs the same major and a minor <= " + std::to_string(selected.minor) + ")";
    }
  } else if (v.backend.token != selected.token) {
    return "built for backend " + v.backend.token + ", this machine uses " + selected.token;
  } else if (v.backend.family == "metal") {
    // kernels requires macOS >= 26.0 for Metal arch builds; we cannot tell the macOS version.
    return "Metal builds need macOS 26.0 or later, and kernelhub cannot detect the macOS version";
  }
  return {};
}

std::string rejection(const ParsedVariant& v, const Platform& p, const BackendToken& selected) {
  if (v.framework != Framework::noarch) return arch_rejection(v, p, selected);
  const std::string wanted = noarch_name(selected);
  if (v.noarch_backend != wanted && v.noarch_backend != "universal") {
    return "Python-only build for " + v.noarch_backend + ", this machine uses " + wanted;
  }
  return {};
}

// The sort key of kernels' _sort_variants, plus a last rank (3) for unparsable names.
using SortKey = std::array<int, 5>;

SortKey sort_key(const ParsedVariant* v, bool accepted) {
  const int decision = accepted ? 0 : 1;
  if (v == nullptr) return {1, 3, 0, 0, 0};
  if (v->framework == Framework::noarch)
    return {decision, 2, 0, 0, v->noarch_backend == "universal" ? 1 : 0};
  const int backend_order = v->backend.versioned ? -v->backend.minor : 0;
  switch (v->framework) {
    case Framework::torch_stable_abi:
      return {decision, 0, -v->major, -v->minor, backend_order};
    case Framework::torch:
      return {decision, 1, 0, v->cxx11_abi ? 1 : 0, backend_order};
    default:
      return {decision, 2, 0, 0, backend_order};
  }
}

}  // namespace

std::vector<VariantCandidate> rank_variants(const std::vector<std::string>& names,
                                            const Platform& platform) {
  const BackendToken selected = platform_backend(platform);
  struct Entry {
    VariantCandidate candidate;
    SortKey key;
  };
  std::vector<Entry> entries;
  std::set<std::string, std::less<>> seen;
  for (const auto& name : names) {
    if (!seen.insert(name).second) continue;
    const auto parsed = parse_variant_name(name);
    VariantCandidate c{name, false, "unrecognised variant name"};
    if (parsed) {
      c.reason = rejection(*parsed, platform, selected);
      c.accepted = c.reason.empty();
      if (c.accepted) c.reason = "compatible";
    }
    const SortKey key = sort_key(parsed ? &*parsed : nullptr, c.accepted);
    entries.push_back({std::move(c), key});
  }
  // Stable: ties (e.g. a cpu tvm-ffi build vs torch-cpu) keep the listing order.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.key < b.key; });
  std::vector<VariantCandidate> ranked;
  ranked.reserve(entries.size());
  for (auto& e : entries) ranked.push_back(std::move(e.candidate));
  return ranked;
}

Result<std::string> select_variant(const std::vector<std::string>& names,
                                   const Platform& platform) {
  const auto ranked = rank_variants(names, platform);
  if (!ranked.empty() && ranked.front().accepted) return ranked.front().name;
  std::string message = "no build variant fits this machine (" + platform.describe() + ")";
  if (ranked.empty())
    return fail(ErrorCode::no_matching_variant, message + ": the kernel has no build variants");
  message += "; variants found:";
  for (const auto& c : ranked) message += "\n  " + c.name + ": " + c.reason;
  return fail(ErrorCode::no_matching_variant, std::move(message));
}

}  // namespace kernelhub::variant
