#include "torch_identity.hpp"

#include <link.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace kernelhub::python::detail {
namespace {

int find_libtorch(dl_phdr_info* info, std::size_t /*size*/, void* data) {
  const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  if (name.ends_with("/libtorch_cpu.so")) {
    *static_cast<std::filesystem::path*>(data) = std::string(name);
    return 1;
  }
  return 0;
}

}  // namespace

Result<std::filesystem::path> mapped_libtorch() {
  std::filesystem::path found;
  ::dl_iterate_phdr(find_libtorch, &found);
  if (found.empty()) {
    return fail(ErrorCode::load_failed, "this process has no libtorch_cpu.so mapped");
  }
  return found;
}

Result<void> check_same_torch(const std::filesystem::path& torch_dir) {
  KH_TRY_ASSIGN(const auto mapped, mapped_libtorch());
  const auto theirs = torch_dir / "lib" / "libtorch_cpu.so";
  struct stat ours_st {};
  struct stat theirs_st {};
  if (::stat(mapped.c_str(), &ours_st) != 0) {
    return fail(ErrorCode::io, "cannot stat " + mapped.string() + ": " + std::strerror(errno));
  }
  if (::stat(theirs.c_str(), &theirs_st) != 0 || ours_st.st_dev != theirs_st.st_dev ||
      ours_st.st_ino != theirs_st.st_ino) {
    return fail(ErrorCode::incompatible_kernel,
                "the Python found for Python kernels imports torch from " + torch_dir.string() +
                    ", whose libtorch (" + theirs.string() +
                    ") is not the one this process runs (" + mapped.string() +
                    "); set KERNELHUB_PYTHON to the python of the environment this app's libtorch "
                    "comes from");
  }
  return ok();
}

}  // namespace kernelhub::python::detail
