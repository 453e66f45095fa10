// The C++ side of test_kernelize.py, linked like an app (libkernelhub): builds a model of
// every layer module, kernelizes it with a mapping file and prints the report as JSON, or
// {"error": {"type", "message"}} when kernelize raises.
//   kh_kernelize_tool MAPPING --mode inference[+torch_compile]|training[...] --device D
//                     [--capability N] [--fallback default|none|all]
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include <kernelhub/kernelize.hpp>

namespace kl = kernelhub::layers;

namespace {

struct Model : torch::nn::Module {
  Model() {
    register_module("norm", kl::RMSNorm(kl::RMSNormOptions(32)));
    register_module("ln", kl::LayerNorm(kl::LayerNormOptions(32)));
    register_module("act", kl::SiluAndMul());
    register_module("silu", kl::Silu());
    register_module("gelu", kl::Gelu());
    register_module("gelu_tanh", kl::GeluTanh());
    register_module("fast", kl::FastGELU());
    register_module("new", kl::NewGELU());
    register_module("quick", kl::QuickGELU());
    register_module("rotary", kl::ApplyRotary());
  }
};

kl::Mode parse_mode(const std::string& text) {
  kl::Mode mode = kl::Mode::inference;
  if (text.starts_with("training")) mode = kl::Mode::training;
  if (text.ends_with("+torch_compile")) mode = mode | kl::Mode::torch_compile;
  return mode;
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: kh_kernelize_tool MAPPING --mode M --device D [--capability N] "
                 "[--fallback default|none|all]\n";
    return 2;
  }
  kl::KernelizeOptions options;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--mode") options.mode = parse_mode(value);
    if (flag == "--device") options.device = value;
    if (flag == "--capability") options.capability = std::stoi(value);
    if (flag == "--fallback") {
      options.fallback = value == "none"  ? kl::Fallback::none
                         : value == "all" ? kl::Fallback::all
                                          : kl::Fallback::default_cases;
    }
  }
  Model model;
  nlohmann::json out;
  try {
    const auto report = kl::kernelize(model, kl::KernelMapping::from_file(argv[1]), options);
    out = nlohmann::json::parse(report.to_json());
  } catch (const kl::MappingError& e) {
    out = {{"error", {{"type", "MappingError"}, {"message", e.what()}}}};
  } catch (const kl::LayerRefused& e) {
    out = {{"error", {{"type", "LayerRefused"}, {"message", e.what()}}}};
  } catch (const kl::KernelizeError& e) {
    out = {{"error", {{"type", "KernelizeError"}, {"message", e.what()}}}};
  }
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "kh_kernelize_tool: " << error.what() << "\n";
    return 1;
  }
}
