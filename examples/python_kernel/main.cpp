// python_kernel_app KERNEL FUNCTION: calls FUNCTION(x, y) of a Python-only kernel on two
// small tensors and prints what came back. KERNEL is a Hub repo (org/name, version 1,
// fetched through kernelhubd or in-process) or a local folder (a path with a '/' first or a
// '.').
//
//   KERNELHUB_PYTHON=$VIRTUAL_ENV/bin/python python_kernel_app kernels-community/py-ops add_
#include <iostream>
#include <string>

#include <ATen/ATen.h>
#include <kernelhub/python_kernel.hpp>

namespace kpy = kernelhub::python;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: python_kernel_app KERNEL FUNCTION\n";
    return 2;
  }
  const std::string kernel_name = argv[1];
  try {
    const bool local = kernel_name.starts_with("/") || kernel_name.starts_with(".");
    const kpy::Kernel kernel =
        local ? kpy::get_local_kernel(kernel_name) : kpy::get_kernel(kernel_name, {.version = 1});
    const at::Tensor x = at::ones({2, 3});
    const at::Tensor y = at::full({2, 3}, 2.0);
    const c10::IValue out = kernel.call(argv[2], {x, y});
    std::cout << kernel.repo() << " (" << kernel.variant() << ", module " << kernel.module_name()
              << ")." << argv[2] << " -> ";
    if (out.isTensor()) {
      std::cout << "tensor sum " << out.toTensor().sum().item<double>()
                << (out.toTensor().data_ptr() == x.data_ptr() ? ", x itself" : "") << "\n";
    } else {
      std::cout << out << "\n";
    }
  } catch (const kpy::PythonError& error) {
    std::cerr << "the kernel raised " << error.type() << ": " << error.python_message() << " at "
              << error.file() << ":" << error.line() << "\n";
    return 1;
  } catch (const kpy::KernelError& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
  return 0;
}
