// `--mapping FILE` of `kernelhub lock`, `prefetch` and `pin`: every kernel a layer mapping
// file (docs/layers.md) names, so that a fleet resolves, verifies and pins what a model's
// kernelize will load before the model starts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernelhub/fetch/ref.hpp"
#include "kernelhub/trust/layer_mapping.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/util/environment.hpp"

namespace kernelhub::cli {

// One kernel of a mapping: a hub entry's repo at its version or revision, or a locked entry's
// lock entry (from the lockfile it names, or KERNELHUB_LOCKFILE for `locked = true`).
struct MappedKernel {
  trust::RepoId repo;
  std::optional<fetch::Ref> ref;
  std::optional<trust::LockEntry> locked;
};

struct MappingKernels {
  std::vector<MappedKernel> kernels;
  std::size_t local = 0;  // local builds, which need nothing from the Hub
};

// A locked entry whose lockfile does not pin its repo is not_locked, naming both.
Result<MappingKernels> read_mapping_kernels(const std::string& path, const util::Environment& env);

}  // namespace kernelhub::cli
