// Calls a Python-only hub kernel through kernelhub::python (libkernelhub) on tensors written by
// a conformance test, and writes the tensors it returns, so Python can compare them with the
// same kernel loaded by `kernels.get_kernel` from the cache kernelhub filled.
//   kh_python_kernel_tool <spec.json>
// spec: {"repo", "version", "function", "args": [tensor...], "kwargs": {name: tensor | number
//        | bool | null}, "outputs": [file...]} with tensors as {"file", "shape", "dtype"}
//        (test_python_kernels.py writes float32); the result (a tensor or a tuple whose tensors are
//        written in order, None entries skipped).
#include <kernelhub/python_kernel.hpp>

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensor_file.hpp"

namespace {

namespace kpy = kernelhub::python;
using kernelhub::conformance::read_tensor;
using kernelhub::conformance::write_tensor;

c10::IValue value_of(const nlohmann::json& spec) {
  if (spec.is_object()) return read_tensor(spec);
  if (spec.is_boolean()) return spec.get<bool>();
  if (spec.is_number_integer()) return spec.get<int64_t>();
  if (spec.is_number()) return spec.get<double>();
  return {};
}

int run(const std::string& spec_path) {
  std::ifstream in(spec_path);
  const auto spec = nlohmann::json::parse(in);
  const auto kernel = kpy::get_kernel(spec.at("repo").get<std::string>(),
                                      {.version = spec.at("version").get<std::uint64_t>()});
  kpy::Args args;
  for (const auto& arg : spec.at("args")) args.push_back(value_of(arg));
  kpy::Kwargs kwargs;
  for (const auto& [name, value] : spec.at("kwargs").items())
    kwargs.emplace_back(name, value_of(value));
  const auto result = kernel.call(spec.at("function").get<std::string>(), args, kwargs);
  std::vector<at::Tensor> tensors;
  if (result.isTuple()) {
    for (const auto& item : result.toTupleRef().elements()) {
      if (item.isTensor()) tensors.push_back(item.toTensor());
    }
  } else {
    tensors.push_back(result.toTensor());
  }
  const auto outputs = spec.at("outputs").get<std::vector<std::string>>();
  if (outputs.size() != tensors.size()) {
    throw std::runtime_error("the kernel returned " + std::to_string(tensors.size()) +
                             " tensors, the spec names " + std::to_string(outputs.size()));
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    write_tensor(tensors[i].to(at::kFloat), outputs[i]);
  }
  std::cout << kernel.module_name() << " " << kernel.variant() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: kh_python_kernel_tool <spec.json>\n";
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& error) {
    std::cerr << "kh_python_kernel_tool: " << error.what() << "\n";
    return 1;
  }
}
