// libkh_python_host_probe.so: libkernelhub's Python runtime inside a process that already
// runs Python (loaded with ctypes by tests/python/test_host_python.py). It must use that
// interpreter, not start a second one.
//   int kh_probe_module_name(const char* kernel_dir, char* out, size_t size)
// writes the imported kernel's module name (what the host then finds in its sys.modules);
// returns 0, or 1 with the error in `out`.
#include <cstddef>
#include <cstring>
#include <string>

#include <ATen/ATen.h>

#include "kernelhub/python_kernel.hpp"

namespace {

int answer(const std::string& text, char* out, std::size_t size, int status) {
  if (size > 0) {
    std::strncpy(out, text.c_str(), size - 1);
    out[size - 1] = '\0';
  }
  return status;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int kh_probe_module_name(const char* kernel_dir,
                                                                           char* out,
                                                                           std::size_t size) {
  try {
    const auto kernel = kernelhub::python::get_local_kernel(kernel_dir);
    auto x = at::ones({3});
    if (kernel.call("add_", {x, at::ones({3})}).toTensor().data_ptr() != x.data_ptr()) {
      return answer("add_ returned another tensor", out, size, 1);
    }
    return answer(kernel.call("module_name").toStringRef(), out, size, 0);
  } catch (const std::exception& error) {
    return answer(error.what(), out, size, 1);
  }
}
