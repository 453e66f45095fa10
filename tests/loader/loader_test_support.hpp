// Paths of the fixture builds and small helpers shared by the loader tests.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "kernelhub/loader/kernel_loader.hpp"

namespace kernelhub::testing {

// <build>/fixtures/src/<name>-v<version>: the kernel folder with build/<variant>/ inside.
std::filesystem::path fixture_kernel_dir(const std::string& name, int version);
// Its build/<variant>/ folder for this build's torch (KH_FIXTURE_VARIANT).
std::filesystem::path fixture_variant_dir(const std::string& name, int version);
// Its CUDA build/<variant>/ (KH_FIXTURE_CUDA_VARIANT); fails the test, saying why, when the
// CUDA fixtures were not built.
std::filesystem::path fixture_cuda_variant_dir(const std::string& name, int version);
// The single *.so of a variant folder.
std::filesystem::path only_shared_object(const std::filesystem::path& variant_dir);
// metadata.json `id`, read with nlohmann directly (not through the loader).
std::string metadata_id(const std::filesystem::path& variant_dir);
// Copies a variant folder (files 0644/0755 whatever the umask) to `destination`.
void copy_variant(const std::filesystem::path& from, const std::filesystem::path& destination);
// Ops the c10 dispatcher knows under `ns::`, asked directly.
std::vector<std::string> dispatcher_ops(const std::string& ops_namespace);

// open_local_kernel + load_kernel, REQUIREing success.
std::shared_ptr<const loader::LoadedKernel> load_local(const std::filesystem::path& dir,
                                                       const std::string& repo);

}  // namespace kernelhub::testing
