// A Python-only variant as the embedded interpreter imports it: every file read once into
// memory and checked against the hand-out's digest (so the bytes that run are the bytes
// that were verified), its metadata.json, and where its package starts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "bridge_api.hpp"
#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/trust/metadata.hpp"
#include "kernelhub/util/result.hpp"
#include "kernelhub/variant/variant_name.hpp"

namespace kernelhub::python::detail {

inline constexpr std::uint64_t kMaxPythonFileBytes = variant::kMaxPythonSourceBytes;
inline constexpr std::uint64_t kMaxPythonVariantBytes = std::uint64_t{256} << 20;

struct VerifiedPackage {
  PackageSpec spec;
  trust::KernelMetadata metadata;
  std::string backend;  // what it runs on here: cpu, cuda, ... (universal: this process's)
};

// incompatible_kernel for a variant this process cannot import (not Python-only, another
// backend, no metadata.json id, no __init__.py); too_large past the bounds above; what
// loader::read_verified_file returns for a file that does not verify.
Result<VerifiedPackage> read_package(const loader::KernelSource& source,
                                     const std::filesystem::path& variant_dir,
                                     const loader::Runtime& runtime);

}  // namespace kernelhub::python::detail
