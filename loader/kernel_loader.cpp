// verify-then-dlopen (kernel_loader.hpp) and the process-wide registry of loaded kernels.
#include "kernelhub/loader/kernel_loader.hpp"

#include <dlfcn.h>
#include <fcntl.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "dispatcher_ops.hpp"
#include "kernelhub/loader/elf_symbols.hpp"
#include "kernelhub/loader/load_order.hpp"
#include "kernelhub/loader/python_shim.hpp"
#include "kernelhub/trust/metadata.hpp"
#include "metadata_file.hpp"
#include "verify.hpp"

namespace kernelhub::loader {
namespace {

// Never destroyed: the fds must stay open for as long as their libraries are mapped, which
// is until the process ends (S27: a closed fd's number, reused for another file, would make
// dlopen("/proc/self/fd/N") return the old library).
struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<const LoadedKernel>> kernels;  // load order
  std::map<std::string, std::shared_ptr<const LoadedKernel>, std::less<>> by_namespace;
  std::vector<UniqueFd> open_files;
};

Registry& registry() {
  static auto* instance = new Registry;
  return *instance;
}

bool is_shared_object(std::string_view path) { return path.ends_with(".so"); }

// "_relu_cpu_1a2b3c4.abi3.so" -> "_relu_cpu_1a2b3c4".
std::string so_stem(std::string_view path) {
  std::string_view name = path.substr(path.rfind('/') + 1);
  for (const std::string_view suffix : {".abi3.so", ".so"}) {
    if (name.ends_with(suffix)) return std::string(name.substr(0, name.size() - suffix.size()));
  }
  return std::string(name);
}

// dlopen through the fd. If this process already dlopen'ed another file under the same
// /proc/self/fd/N name (someone closed an fd we now reuse), glibc would hand back that
// library: move our fd to a fresh number first.
Result<void> dlopen_fd(UniqueFd& fd, std::string_view what) {
  for (int attempt = 0;; ++attempt) {
    const std::string name = "/proc/self/fd/" + std::to_string(fd.get());
    if (::dlopen(name.c_str(), RTLD_NOLOAD | RTLD_LAZY) == nullptr) {
      if (::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr) return ok();
      const char* why = ::dlerror();
      return fail(ErrorCode::load_failed, "dlopen of " + std::string(what) + " failed: " +
                                              (why != nullptr ? why : "unknown error"));
    }
    if (attempt == 16) {
      return fail(ErrorCode::load_failed, "no unused /proc/self/fd name for " + std::string(what));
    }
    UniqueFd fresh(::fcntl(fd.get(), F_DUPFD_CLOEXEC, fd.get() + 1));
    if (!fresh) return fail(ErrorCode::io, "cannot duplicate the fd of " + std::string(what));
    fd = std::move(fresh);
  }
}

struct VerifiedKernel {
  std::vector<SharedObject> objects;
  std::vector<std::size_t> order;
  bool needs_shim = false;
  std::string ops_namespace;
};

// Everything that needs no lock: compatibility, file checks, symbols, dependencies.
Result<VerifiedKernel> verify(const KernelSource& source) {
  KH_TRY(check_variant_compatible(source.variant, current_runtime()));
  for (const auto& file : source.files) KH_TRY(detail::verify_file(file, source.repo));
  KH_TRY_ASSIGN(auto metadata, read_metadata(source));

  VerifiedKernel kernel;
  for (const auto& file : source.files) {
    if (!is_shared_object(file.path)) continue;
    KH_TRY_ASSIGN(auto info, read_elf_dynamic(file.fd.get(), source.repo + ": " + file.path));
    kernel.objects.push_back({file.path, std::move(info)});
  }
  if (kernel.objects.empty()) {
    return fail(ErrorCode::incompatible_kernel,
                source.repo + " (" + source.variant +
                    ") has no compiled extension (.so) to load; a Python-only kernel needs Python");
  }
  KH_TRY_ASSIGN(kernel.needs_shim, detail::check_python_symbols(kernel.objects, source.repo));
  KH_TRY_ASSIGN(kernel.order, plan_load_order(kernel.objects));
  // The last object loaded is one nothing else in the variant needs: the extension itself.
  kernel.ops_namespace = metadata.id.value_or(so_stem(kernel.objects[kernel.order.back()].path));
  return kernel;
}

}  // namespace

Result<std::shared_ptr<const LoadedKernel>> load_kernel(KernelSource source) {
  KH_TRY_ASSIGN(auto verified, verify(source));

  auto& reg = registry();
  const std::lock_guard lock(reg.mutex);
  if (const auto it = reg.by_namespace.find(verified.ops_namespace); it != reg.by_namespace.end()) {
    return it->second;
  }
  auto kernel = std::make_shared<LoadedKernel>();
  kernel->ops_namespace = verified.ops_namespace;
  kernel->repo = source.repo;
  kernel->variant = source.variant;
  for (const auto index : verified.order) {
    kernel->shared_objects.push_back(verified.objects[index].path);
  }
  // Registered by someone else (Python's import): a second TORCH_LIBRARY for the namespace
  // would abort the process, and the ops are usable as they are.
  kernel->loaded_here = detail::registered_ops(kernel->ops_namespace).empty();
  if (kernel->loaded_here) {
    if (verified.needs_shim) KH_TRY(ensure_python_shim());
    for (const auto& path : kernel->shared_objects) {
      auto file = std::find_if(source.files.begin(), source.files.end(),
                               [&](const KernelFile& f) { return f.path == path; });
      const auto result = dlopen_fd(file->fd, source.repo + ": " + path);
      // Mapped or not, the fd is kept: an earlier sibling of this variant may be mapped.
      reg.open_files.push_back(std::move(file->fd));
      if (!result) return fail(result.error());
    }
  }
  reg.kernels.push_back(kernel);
  reg.by_namespace.emplace(kernel->ops_namespace, kernel);
  return std::shared_ptr<const LoadedKernel>(std::move(kernel));
}

std::vector<std::shared_ptr<const LoadedKernel>> loaded_kernels() {
  auto& reg = registry();
  const std::lock_guard lock(reg.mutex);
  return reg.kernels;
}

Result<trust::KernelMetadata> read_metadata(const KernelSource& source) {
  const auto file = std::find_if(source.files.begin(), source.files.end(),
                                 [](const KernelFile& f) { return f.path == "metadata.json"; });
  if (file == source.files.end()) return trust::KernelMetadata{};  // none before 2026-04
  return detail::read_metadata_fd(file->fd.get(), source.repo + ": metadata.json");
}

}  // namespace kernelhub::loader
