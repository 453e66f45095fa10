// Where a hub kernel's files come from: a LOCAL_KERNELS build, else the Hub through
// kernelhubd (or the embedded pipeline when no daemon runs) at the version or revision asked
// for, or at the commit the lockfile in force pins; and the locally installed kernel
// libraries with a version pin. What comes back is the verified files of one variant, ready
// for the loader's verify-then-dlopen (the dispatcher) or for a Python import; nothing is
// loaded here. Every error's message names the user and the kernel and says how to fix it,
// so a caller only maps the ErrorCode to its own error type (is_refused: a trust or
// verification refusal, never a silent fall-back).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::provider {

// A hub kernel: `repo` at version N (branch vN) or at a revision, exactly one of the two.
//   HubKernelSpec{"flash_hub", "kernels-community/flash-attn2", 3}
//   HubKernelSpec{.user = "python kernel", .repo = "org/name", .revision = "main"}
struct HubKernelSpec {
  std::string_view user;  // for messages: "flash_hub", "python kernel"
  std::string_view repo;  // "kernels-community/flash-attn2"
  std::optional<std::uint64_t> version = std::nullopt;
  std::optional<std::string> revision = std::nullopt;
  // What the caller can use: compiled builds (the dispatcher's dlopen), or Python-only ones
  // too (the Python runtime). Picks a LOCAL_KERNELS build; the Hub's selection is the
  // fetcher's, which ranks compiled builds first.
  loader::VariantKinds kinds = loader::VariantKinds::compiled;
  // kernels' LockedLayerRepository: the kernel at the commit a lockfile pins. `lockfile`
  // names one; without it, require_lock asks the lockfile in force. Either way version and
  // revision may be absent (the lock decides), and a repo no lockfile pins is not_locked.
  std::optional<std::string> lockfile = std::nullopt;
  bool require_lock = false;
};

// A locally installed kernel library (LOCAL_KERNELS[library]) and the version pin Diffusers
// applies to its package.
struct LibrarySpec {
  std::string_view backend;      // "flash"
  std::string_view library;      // LOCAL_KERNELS key: "flash-attn"
  std::string_view min_version;  // "2.6.3"; empty: no pin
  std::string_view requirement;  // what Diffusers asks for: "flash-attn>=2.6.3"
};

struct ProvidedKernel {
  loader::KernelSource source;  // the variant's files, each an fd opened beneath its folder
  std::string commit;           // the commit served; empty for a local build
  // Where the files live (the cache snapshot's build/<variant>, or the local variant folder),
  // for messages and Python's __file__: the bytes are the fds', never read from this path.
  std::filesystem::path variant_dir;
  bool local = false;  // from LOCAL_KERNELS, not the Hub
  // What an error about this kernel starts with: "flash_hub: cannot use org/name v3",
  // "flash_hub: local kernel org/name at /path" (see explain_use_error).
  std::string context;
};

// LOCAL_KERNELS[spec.repo] when set (a local build, no download), else the Hub's files,
// fetched and verified (the trust variables are read from the process environment). With a
// lockfile in force (set_lockfile_override, else KERNELHUB_LOCKFILE) the repo is fetched at
// its locked commit, and a repo the lock does not name, or locks at another version or
// revision, is refused (not_locked). A spec with neither or both of version and revision is
// invalid_argument.
Result<ProvidedKernel> provide_hub_source(const HubKernelSpec& spec);

// A kernel build on the local disk (kernels' get_local_kernel, LocalLayerRepository): `dir`
// is a variant folder or holds build/<variant>/, picked for this process. `user` starts the
// messages.
Result<ProvidedKernel> provide_local_source(std::string_view user, const std::filesystem::path& dir,
                                            loader::VariantKinds kinds);

// LOCAL_KERNELS[spec.library] when its metadata version satisfies the pin. Missing from
// LOCAL_KERNELS: entry_not_found; too old: incompatible_kernel; each with Diffusers' "is not
// usable because ..." wording and the install advice.
Result<ProvidedKernel> provide_local_library_source(const LibrarySpec& spec);

// A failure to use a provided kernel (the loader's, Python's import), told like the
// provider's own errors: the kernel's context first and, for a kernel from the Hub, the
// error table's fix.
Error explain_use_error(const HubKernelSpec& spec, const ProvidedKernel& kernel, Error error);
Error explain_use_error(const LibrarySpec& spec, const ProvidedKernel& kernel, Error error);

}  // namespace kernelhub::provider
