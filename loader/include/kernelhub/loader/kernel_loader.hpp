// kernelhub::loader: verify-then-dlopen of kernel-builder torch extensions, without Python.
//
// A kernel arrives as the files of one build variant, each an fd that was opened without
// following symlinks (handed out by kernelhubd, or opened by the embedded client). Before
// anything is mapped: the fd must be a regular file not writable by others, its bytes must
// hash to the manifest's sha256, the variant must match the linked libtorch (version, arch,
// device), and the .so's dynamic section must need nothing we cannot provide (Python data
// symbols, unresolvable DT_NEEDED libraries). Only then is /proc/self/fd/N dlopen'ed with
// RTLD_NOW|RTLD_LOCAL, after the Python C-API shim is in the global scope. The fd stays open
// for the life of the process (glibc deduplicates by name: a reused fd number would return
// the old library), and each ops namespace is loaded once: a second TORCH_LIBRARY for the
// same namespace aborts the process.
//
// This header has no torch includes; op lookup and calls are in
// kernelhub/loader/kernel_ops.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernelhub/trust/metadata.hpp"
#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::loader {

struct KernelFile {
  // Relative to the variant folder, '/'-separated, e.g. "_relu_cpu_1a2b3c4.abi3.so".
  std::string path;
  std::string sha256;  // expected digest, lowercase hex
  UniqueFd fd;         // read-only, regular file; the loader takes ownership
};

struct KernelSource {
  std::string repo;     // for messages and bookkeeping: "kernels-community/relu", "local:/path"
  std::string variant;  // build/<variant> folder name, e.g. torch215-cxx11-cpu-x86_64-linux
  std::vector<KernelFile> files;  // every file of the variant; the *.so among them are loaded
};

struct LoadedKernel {
  std::string ops_namespace;  // metadata.json `id`, else the .so stem
  std::string repo;
  std::string variant;
  std::vector<std::string> shared_objects;  // variant-relative paths, in load order
  bool loaded_here = false;  // false: the namespace was already registered (e.g. by Python)
};

// The libtorch this process runs and the device it can use, for variant checks.
struct Runtime {
  int torch_major = 0;
  int torch_minor = 0;
  std::string arch;  // x86_64 | aarch64
  std::string os;    // linux
  // "13.2" when libtorch_cuda is loaded, GPU or not: the CUDA builds this process can load.
  std::optional<std::string> libtorch_cuda;
  // "13.2" when CUDA is also usable (a device is present): what variant selection prefers.
  std::optional<std::string> cuda;
  bool cxx11_abi = true;  // _GLIBCXX_USE_CXX11_ABI of the libtorch build
};
Runtime current_runtime();

// {major, minor} of CUDA device `device` (-1: the current one), asked from the CUDA runtime
// library already loaded by torch (never loading one); nullopt without one.
std::optional<std::pair<int, int>> cuda_compute_capability(int device = -1);

// Refuses a variant this process cannot load, saying why (torch version, ABI, arch, device).
// Python-only variants are refused here: they are not loaded, they are imported.
Result<void> check_variant_compatible(std::string_view variant, const Runtime& runtime);

// Refuses a Python-only variant (torch-<backend>, torch-universal) this process cannot run:
// as `kernels` requires, its backend is `universal` or this process's (cuda when a CUDA
// device is usable, else cpu).
Result<void> check_noarch_compatible(std::string_view variant, const Runtime& runtime);

// Which variants a caller can use: compiled ones only (dlopen), or Python-only ones too
// (the embedded Python runtime, kernelhub/python_kernel.hpp).
enum class VariantKinds { compiled, compiled_or_python };

// Verifies and loads a kernel, or returns the already loaded one for its namespace.
// Thread-safe. Errors: hash_mismatch, unsafe_kernel, missing_dependency,
// incompatible_kernel, load_failed, io.
Result<std::shared_ptr<const LoadedKernel>> load_kernel(KernelSource source);

// Kernels loaded so far by this process (in load order).
std::vector<std::shared_ptr<const LoadedKernel>> loaded_kernels();

// A locally built kernel (LOCAL_KERNELS=repo=path, or a library backend's install): `dir` is
// either a variant folder or a folder with build/<variant>/ inside, picked for `runtime`.
// Files are opened beneath `dir` without following symlinks; expected digests come from
// metadata.json's `digest` when present, else from the bytes read (a local build is the
// user's own code; it still gets the symbol and compatibility checks).
Result<KernelSource> open_local_kernel(const std::filesystem::path& dir, std::string_view repo,
                                       const Runtime& runtime,
                                       VariantKinds kinds = VariantKinds::compiled);

// `metadata.json` of a source (trust::parse_kernel_metadata, every field optional), for
// callers that need `version` (local library pins) or `id`; empty when there is none.
Result<trust::KernelMetadata> read_metadata(const KernelSource& source);

}  // namespace kernelhub::loader
