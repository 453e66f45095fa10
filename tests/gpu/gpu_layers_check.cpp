// kernelize on the device: the Llama block of tests/layers/llama_block.hpp bound to the
// fixture layer kernels (activation, rmsnorm, rotary; then layer-norm's LlamaRMSNorm and
// liger-kernels' Python LigerRMSNorm) from their local builds, against the same block on
// ATen, in fp32 and bf16. On a GPU the kernels' CUDA builds (and the Python layer on CUDA
// tensors) run; in the rehearsal, their CPU builds.
#include <ATen/ops/randn.h>

#include <exception>
#include <string>

#include "gpu/gpu_check.hpp"
#include "kernelhub/kernelize.hpp"
#include "torch_support/llama_block.hpp"

namespace kernelhub::gpu_check {
namespace {

namespace fs = std::filesystem;
namespace kl = kernelhub::layers;
using kernelhub::testing::LlamaBlock;
using kernelhub::testing::LlamaBlockImpl;

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
}

// One mapping, bound and compared in each dtype.
void check_block(Report& report, const std::string& subject, const kl::KernelMapping& mapping,
                 std::size_t expected_bound, c10::Device device, int sm) {
  for (const auto dtype : {at::kFloat, at::kBFloat16}) {
    const std::string label = subject + (dtype == at::kFloat ? ", fp32" : ", bf16");
    try {
      LlamaBlock plain(256, 4, 512);
      plain->to(device, dtype);
      auto bound = std::dynamic_pointer_cast<LlamaBlockImpl>(plain->clone(device));
      kl::KernelizeOptions options{.mode = kl::Mode::inference,
                                   .device = device.is_cuda() ? "cuda" : "cpu"};
      if (device.is_cuda()) options.capability = sm;
      const auto kernelized = kl::kernelize(*bound, mapping, options);
      if (kernelized.bound_count() != expected_bound) {
        report.add("layers", label, Status::fail, kernelized.to_json());
        continue;
      }
      const auto options_of = at::TensorOptions().device(device).dtype(dtype);
      const at::Tensor x = at::randn({2, 32, 256}, options_of);
      auto [cos, sin] = kernelhub::testing::rotary_tables(2, 32, 64);
      cos = cos.to(device, dtype);
      sin = sin.to(device, dtype);
      const double diff = max_abs_diff(bound->forward(x, cos, sin), plain->forward(x, cos, sin));
      // fp32: the kernels' arithmetic order; bf16: one rounding of outputs around 4.
      const double tolerance = dtype == at::kFloat ? 1e-3 : 1.5e-1;
      report.add("layers", label, diff <= tolerance ? Status::pass : Status::fail,
                 std::to_string(kernelized.bound_count()) + " layers bound (" +
                     kernelized.layers.front().kernel + ", ...); max |block - ATen block| = " +
                     format_number(diff, 3) + " (tolerance " + format_number(tolerance, 3) + ")");
    } catch (const std::exception& error) {
      report.add("layers", label, Status::fail, error_text(error));
    }
  }
}

}  // namespace

void check_layers(Report& report, const fs::path& fixtures, c10::Device device, int sm) {
  const fs::path src = fixtures / "src";
  const std::string type = device.is_cuda() ? "cuda" : "cpu";
  kl::KernelMapping native;
  native.add("RMSNorm", {type}, kl::local_layer(src / "rmsnorm-v1", "RMSNorm"));
  native.add("SiluAndMul", {type}, kl::local_layer(src / "activation-v1", "SiluAndMul"));
  native.add("rotary_pos_emb", {type},
             kl::local_layer(src / "rotary-v2", "apply_rotary_transformers"));
  check_block(report, "block: rmsnorm, activation, rotary (native)", native, 4, device, sm);

  kl::KernelMapping layer_norm = native;
  layer_norm.add("RMSNorm", {type}, kl::local_layer(src / "layer-norm-v1", "LlamaRMSNorm"));
  check_block(report, "block: layer-norm LlamaRMSNorm (native)", layer_norm, 4, device, sm);

  kl::KernelMapping liger = native;
  liger.add("RMSNorm", {type}, kl::local_layer(src / "liger-kernels-v3", "LigerRMSNorm"));
  check_block(report, "block: liger-kernels LigerRMSNorm (Python layer)", liger, 4, device, sm);
}

}  // namespace kernelhub::gpu_check
