// Runs kernelhub::attention::dispatch_attention on tensors written by a conformance test and
// writes the output back, so Python can compare it with Diffusers' dispatch_attention_fn on
// identical inputs. Linked against libkernelhub, the library apps use.
//   kh_attention_tool <spec.json>
//   kh_attention_tool --list-backends      (one name a line, list_backends() order)
// spec: {"query"|"key"|"value"|"attn_mask": {"file", "shape", "dtype"}, "dropout_p",
//        "is_causal", "scale", "enable_gqa", "backend", "output"}
#include <kernelhub/attention_dispatch.hpp>

#include <ATen/ops/empty.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

at::ScalarType dtype_of(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  if (name == "bool") return at::kBool;
  throw std::invalid_argument("unknown dtype " + name);
}

at::Tensor read_tensor(const nlohmann::json& spec) {
  std::ifstream in(spec.at("file").get<std::string>(), std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  const auto shape = spec.at("shape").get<std::vector<int64_t>>();
  at::Tensor tensor = at::empty(shape, at::TensorOptions().dtype(dtype_of(spec.at("dtype"))));
  if (static_cast<size_t>(tensor.nbytes()) != bytes.size()) {
    throw std::invalid_argument("size of " + spec.at("file").get<std::string>() +
                                " does not match its shape");
  }
  std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
  return tensor;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--list-backends") {
    for (const auto& name : kernelhub::attention::list_backends())
      std::printf("%s\n", name.c_str());
    return 0;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: kh_attention_tool <spec.json>\n");
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    const auto spec = nlohmann::json::parse(in);
    kernelhub::attention::AttentionOptions options;
    if (!spec.at("attn_mask").is_null()) options.attn_mask = read_tensor(spec.at("attn_mask"));
    options.dropout_p = spec.at("dropout_p");
    options.is_causal = spec.at("is_causal");
    if (!spec.at("scale").is_null()) options.scale = spec.at("scale").get<double>();
    options.enable_gqa = spec.at("enable_gqa");
    options.backend = spec.at("backend").get<std::string>();
    const at::Tensor out = kernelhub::attention::dispatch_attention(
                               read_tensor(spec.at("query")), read_tensor(spec.at("key")),
                               read_tensor(spec.at("value")), options)
                               .contiguous();
    std::ofstream(spec.at("output").get<std::string>(), std::ios::binary)
        .write(static_cast<const char*>(out.data_ptr()),
               static_cast<std::streamsize>(out.nbytes()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kh_attention_tool: %s\n", e.what());
    return 1;
  }
}
