// Parsing of build-variant folder names and backend tokens (research/kernels-library.md §2.1).
// Internal to kh_variant: variant.cpp ranks parsed names, platform.cpp validates backend flags.
#pragma once

#include <cstdint>

#include <optional>
#include <string>
#include <string_view>

namespace kernelhub::variant {

// A compute backend as written in a variant name: "cu132", "rocm71", "xpu20253", "cann80",
// or one of the unversioned "cpu", "metal", "neuron", "tpu".
struct BackendToken {
  std::string family;  // "cuda", "rocm", "xpu", "cann", "cpu", "metal", "neuron", "tpu"
  std::string token;   // the text as written, e.g. "cu132"
  bool versioned = false;
  int major = 0;  // versioned only: the last digit is the minor, the rest the major
  int minor = 0;
};

std::optional<BackendToken> parse_backend_token(std::string_view token);

// The backend name a noarch variant (`torch-<name>`) must carry for this backend;
// Ascend's "cann" maps to "npu".
std::string noarch_name(const BackendToken& backend);

// The largest source file of a Python-only build: what kernelhub's Python runtime reads into
// memory to import (python/verified_package.cpp), and so the largest the fetcher downloads
// for one (a larger one is refused from the listing, before any byte is fetched).
inline constexpr std::uint64_t kMaxPythonSourceBytes = std::uint64_t{16} << 20;

enum class Framework { torch, torch_stable_abi, tvm_ffi, noarch };

struct ParsedVariant {
  Framework framework = Framework::noarch;
  int major = 0;  // torch / stable-ABI / tvm-ffi version; unused for noarch
  int minor = 0;
  std::optional<bool> cxx11_abi;  // torch arch only: nullopt when the name has no ABI tag
  BackendToken backend;           // arch variants only
  std::string cpu;                // arch variants only
  std::string os;                 // arch variants only
  std::string noarch_backend;     // noarch only: "cpu", "cuda", ..., or "universal"
};

// nullopt when the name follows none of the known families.
std::optional<ParsedVariant> parse_variant_name(std::string_view name);

}  // namespace kernelhub::variant
