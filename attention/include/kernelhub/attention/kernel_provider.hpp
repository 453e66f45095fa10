// Where the dispatcher's kernels come from: hub kernels fetched through kernelhubd (or the
// embedded pipeline when no daemon runs), LOCAL_KERNELS overrides, and locally installed
// kernel libraries with a version pin. Everything goes through the loader's
// verify-then-dlopen; each kernel is loaded once per process. Errors are typed exceptions
// (KernelRefused for trust and verification, BackendUnavailable otherwise) that name the
// backend and say how to fix the problem.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/util/environment.hpp"

namespace kernelhub::attention::detail {

// LOCAL_KERNELS="key=path:key2=path2" (the `kernels` library's format). Keys are Hub repo
// ids ("kernels-community/flash-attn2") or library names ("flash-attn"). Malformed entries
// are an error naming the entry.
std::map<std::string, std::string, std::less<>> parse_local_kernels(std::string_view value);

// Version comparison in the spirit of PEP 440 for release numbers with an optional
// pre-release tail: "2.8.3" >= "2.6.3", "3.0.0b1" < "3.0.0", "0.0.32" >= "0.0.29".
bool version_at_least(std::string_view have, std::string_view need);

struct HubKernelSpec {
  std::string_view backend;  // for messages: "flash_hub"
  std::string_view repo;     // "kernels-community/flash-attn2"
  int version = 1;           // branch v<version>
};

// The loaded hub kernel: LOCAL_KERNELS[repo] when set (a local build, no download), else
// fetched, verified and loaded. The trust variables are read from the process environment.
// With a lockfile in force (set_kernel_lockfile, else KERNELHUB_LOCKFILE) the repo is
// fetched at its locked commit; a repo the lock does not name is refused (KernelRefused).
std::shared_ptr<const loader::LoadedKernel> provide_hub_kernel(const HubKernelSpec& spec);

struct LibrarySpec {
  std::string_view backend;      // "flash"
  std::string_view library;      // LOCAL_KERNELS key: "flash-attn"
  std::string_view min_version;  // "2.6.3"; empty: no pin
  std::string_view requirement;  // what Diffusers asks for: "flash-attn>=2.6.3"
};

// A locally installed kernel library (LOCAL_KERNELS[library]) whose metadata version
// satisfies the pin.
std::shared_ptr<const loader::LoadedKernel> provide_local_library(const LibrarySpec& spec);

// set_kernel_lockfile's state: nullopt = follow KERNELHUB_LOCKFILE; {nullopt} = no lock.
void set_lockfile_override(std::optional<std::optional<std::string>> path);

// The process environment as seen by the dispatcher (read once; tests may reload it).
const util::Environment& process_environment();
void reload_process_environment();

}  // namespace kernelhub::attention::detail
