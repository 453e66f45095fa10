#include "verify.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "kernelhub/loader/python_shim_symbols.hpp"
#include "kernelhub/trust/digest.hpp"

namespace kernelhub::loader::detail {
namespace {

bool is_python_symbol(std::string_view name) {
  return name.starts_with("Py") || name.starts_with("_Py");
}

bool is_shimmed(std::string_view name) {
  return std::find(kPythonShimFunctions.begin(), kPythonShimFunctions.end(), name) !=
         kPythonShimFunctions.end();
}

}  // namespace

Result<void> verify_file(const KernelFile& file, std::string_view repo) {
  const std::string what = std::string(repo) + ": " + file.path;
  struct stat st {};
  if (::fstat(file.fd.get(), &st) != 0) {
    return fail(ErrorCode::io, "cannot stat " + what + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(ErrorCode::unsafe_kernel, what + " is not a regular file");
  }
  // Anyone else who can write it could change the code after it is verified.
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(ErrorCode::unsafe_kernel, what + " is writable by " +
                                              ((st.st_mode & S_IWOTH) ? "others" : "its group") +
                                              " (mode " + mode + "); refusing to load it");
  }
  KH_TRY_ASSIGN(auto actual, trust::sha256_fd_hex(file.fd.get()));
  if (actual != file.sha256) {
    return fail(ErrorCode::hash_mismatch, what + " has sha256 " + actual + ", expected " +
                                              file.sha256 + "; refusing to load it");
  }
  return ok();
}

Result<bool> check_python_symbols(const std::vector<SharedObject>& objects, std::string_view repo) {
  bool needs_shim = false;
  std::string refused;
  for (const auto& object : objects) {
    for (const auto& symbol : object.info.undefined) {
      if (!is_python_symbol(symbol.name)) continue;
      if (is_shimmed(symbol.name)) {
        needs_shim = true;
      } else if (!symbol.weak) {
        refused += (refused.empty() ? "" : ", ") + symbol.name + " (" + object.path + ")";
      }
    }
  }
  if (refused.empty()) return needs_shim;
  std::string allowed;
  for (const auto name : kPythonShimFunctions) {
    allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  }
  return fail(ErrorCode::unsafe_kernel,
              std::string(repo) +
                  " references Python symbols the loader cannot provide without a Python "
                  "interpreter: " +
                  refused +
                  ". Kernels loaded without Python may only use the module set-up functions " +
                  allowed + "; this kernel needs to be loaded from Python");
}

}  // namespace kernelhub::loader::detail
