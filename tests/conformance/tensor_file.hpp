// Tensors to and from the raw files a conformance test writes (attention_io.py): a spec
// {"file", "shape", "dtype"} names little-endian bytes of a contiguous tensor. Shared by the
// C++ tools the Python tests run (kh_attention_tool, kh_python_kernel_tool).
#pragma once

#include <ATen/ops/empty.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kernelhub::conformance {

inline at::ScalarType dtype_of(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  if (name == "bool") return at::kBool;
  if (name == "int64") return at::kLong;
  throw std::invalid_argument("unknown dtype " + name);
}

inline at::Tensor read_tensor(const nlohmann::json& spec) {
  std::ifstream in(spec.at("file").get<std::string>(), std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  const auto shape = spec.at("shape").get<std::vector<int64_t>>();
  at::Tensor tensor = at::empty(shape, at::TensorOptions().dtype(dtype_of(spec.at("dtype"))));
  if (static_cast<std::size_t>(tensor.nbytes()) != bytes.size()) {
    throw std::invalid_argument("size of " + spec.at("file").get<std::string>() +
                                " does not match its shape");
  }
  std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
  return tensor;
}

inline void write_tensor(const at::Tensor& tensor, const std::string& path) {
  const at::Tensor out = tensor.contiguous();
  std::ofstream(path, std::ios::binary)
      .write(static_cast<const char*>(out.data_ptr()), static_cast<std::streamsize>(out.nbytes()));
}

}  // namespace kernelhub::conformance
