#include "verify.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>

#include "kernelhub/loader/python_shim_symbols.hpp"
#include "kernelhub/loader/verified_file.hpp"
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

namespace {

// A regular file, not writable by group or others; its size.
Result<std::uint64_t> check_file_mode(const KernelFile& file, const std::string& what) {
  struct stat st {};
  if (::fstat(file.fd.get(), &st) != 0) {
    return fail(ErrorCode::io, "cannot stat " + what + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(ErrorCode::unsafe_kernel, what + " is not a regular file");
  }
  // Anyone else who can write it could change the code after it is verified.
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    std::array<char, 8> mode{};
    std::snprintf(mode.data(), mode.size(), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(ErrorCode::unsafe_kernel, what + " is writable by " +
                                              ((st.st_mode & S_IWOTH) ? "others" : "its group") +
                                              " (mode " + mode.data() + "); refusing to load it");
  }
  return static_cast<std::uint64_t>(st.st_size);
}

Result<void> check_digest(const std::string& actual, const KernelFile& file,
                          const std::string& what) {
  if (actual != file.sha256) {
    return fail(ErrorCode::hash_mismatch, what + " has sha256 " + actual + ", expected " +
                                              file.sha256 + "; refusing to load it");
  }
  return ok();
}

}  // namespace

Result<void> verify_file(const KernelFile& file, std::string_view repo) {
  const std::string what = std::string(repo) + ": " + file.path;
  KH_TRY(check_file_mode(file, what));
  KH_TRY_ASSIGN(auto actual, trust::sha256_fd_hex(file.fd.get()));
  return check_digest(actual, file, what);
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

namespace kernelhub::loader {

Result<std::string> read_verified_file(const KernelFile& file, std::string_view repo,
                                       std::uint64_t max_bytes) {
  const std::string what = std::string(repo) + ": " + file.path;
  KH_TRY_ASSIGN(const auto size, detail::check_file_mode(file, what));
  if (size > max_bytes) {
    return fail(ErrorCode::too_large, what + " is " + std::to_string(size) +
                                          " bytes, more than the " + std::to_string(max_bytes) +
                                          " a kernel's Python file may have");
  }
  std::string bytes(size, '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pread(file.fd.get(), bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(ErrorCode::io, "cannot read " + what + ": " + std::strerror(errno));
    if (n == 0) return fail(ErrorCode::size_mismatch, what + " shrank while it was read");
    done += static_cast<std::size_t>(n);
  }
  // One more byte would mean it grew: what is hashed must be all there is.
  char extra = 0;
  if (::pread(file.fd.get(), &extra, 1, static_cast<off_t>(done)) > 0) {
    return fail(ErrorCode::size_mismatch, what + " grew while it was read");
  }
  KH_TRY(detail::check_digest(trust::sha256_hex(bytes), file, what));
  return bytes;
}

}  // namespace kernelhub::loader
