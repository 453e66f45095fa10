// The CUDA fixture variants through the loader on a GPU: the variant the loader picks for
// this process, the dispatch keys their ops register, and their results against ATen.
#include <ATen/TensorOperators.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <c10/core/DispatchKey.h>

#include <exception>
#include <string>

#include "gpu/gpu_check.hpp"
#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/loader/kernel_ops.hpp"

namespace kernelhub::gpu_check {
namespace {

namespace fs = std::filesystem;

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
}

// Loads <fixtures>/src/<name>-v<version> as LOCAL_KERNELS would and checks the variant is a
// CUDA build. Null when it could not be loaded (the row says why).
std::shared_ptr<const loader::LoadedKernel> load_variant(Report& report, const fs::path& fixtures,
                                                         const std::string& name,
                                                         c10::Device device) {
  const fs::path dir = fixtures / "src" / name;
  auto source = loader::open_local_kernel(dir, "local:" + name, loader::current_runtime());
  if (!source) {
    report.add("loader", name, Status::fail, source.error().message);
    return nullptr;
  }
  const std::string variant = source->variant;
  auto kernel = loader::load_kernel(std::move(*source));
  if (!kernel) {
    report.add("loader", name, Status::fail, variant + ": " + kernel.error().message);
    return nullptr;
  }
  const bool fits = (variant.find("-cu") != std::string::npos) == device.is_cuda();
  report.add("loader", name + " variant", fits ? Status::pass : Status::fail,
             variant + " loaded without Python, ops in " + (*kernel)->ops_namespace);
  return fits ? *kernel : nullptr;
}

// The op has a kernel for the device's key and none for the other (a CUDA build registers
// only CUDA, a CPU build only CPU).
bool check_keys(Report& report, const loader::LoadedKernel& kernel, const std::string& label,
                const std::string& op_name, c10::Device device) {
  auto op = loader::KernelOp::find(kernel, op_name);
  if (!op) {
    report.add("loader", label + " " + op_name, Status::fail, op.error().message);
    return false;
  }
  const bool on_cuda = device.is_cuda();
  const bool own = op->has_kernel_for(on_cuda ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU);
  const bool other = op->has_kernel_for(on_cuda ? c10::DispatchKey::CPU : c10::DispatchKey::CUDA);
  const std::string own_name = on_cuda ? "CUDA" : "CPU";
  const std::string other_name = on_cuda ? "CPU" : "CUDA";
  report.add("loader", label + " " + op_name + " dispatch keys",
             own && !other ? Status::pass : Status::fail,
             own_name + " kernel " + (own ? "registered" : "MISSING") + ", " +
                 (other ? other_name + " kernel registered too" : "no " + other_name + " kernel"));
  return own;
}

void check_relu(Report& report, const fs::path& fixtures, int version, c10::Device device) {
  const std::string label = "relu-v" + std::to_string(version);
  const auto kernel = load_variant(report, fixtures, label, device);
  if (!kernel || !check_keys(report, *kernel, label, "relu", device)) return;
  try {
    const auto relu = *loader::KernelOp::find(*kernel, "relu");
    for (auto dtype : {at::kFloat, at::kHalf, at::kBFloat16}) {
      const at::Tensor in = at::randn({4099}, at::TensorOptions().device(device).dtype(dtype));
      at::Tensor out = at::empty_like(in);
      relu.call({out, in});
      const double diff = max_abs_diff(out, at::clamp_min(in, 0));
      report.add("loader", label + " relu " + std::string(c10::toString(dtype)),
                 diff == 0.0 ? Status::pass : Status::fail,
                 "max |kernel - at::relu| = " + format_number(diff, 3));
    }
  } catch (const std::exception& error) {
    report.add("loader", label + " relu call", Status::fail, error_text(error));
  }
}

// flash-attn2's `fwd` called directly with its published schema, against SDPA.
void check_flash_fwd(Report& report, const fs::path& fixtures, c10::Device device) {
  const std::string label = "flash-attn2-v3";
  const auto kernel = load_variant(report, fixtures, label, device);
  if (!kernel || !check_keys(report, *kernel, label, "fwd", device) ||
      !check_keys(report, *kernel, label, "varlen_fwd", device)) {
    return;
  }
  try {
    const auto fwd = *loader::KernelOp::find(*kernel, "fwd");
    for (auto dtype : {at::kHalf, at::kBFloat16}) {
      for (bool causal : {false, true}) {
        const auto options = at::TensorOptions().device(device).dtype(dtype);
        const at::Tensor q = at::randn({2, 300, 8, 64}, options);
        const at::Tensor k = at::randn({2, 300, 8, 64}, options);
        const at::Tensor v = at::randn({2, 300, 8, 64}, options);
        const double scale = 0.125;
        const auto outputs =
            loader::output_tensors(fwd.call_named({{"q", q},
                                                   {"k", k},
                                                   {"v", v},
                                                   {"out_", c10::IValue()},
                                                   {"alibi_slopes_", c10::IValue()},
                                                   {"gen_", c10::IValue()},
                                                   {"p_dropout", 0.0},
                                                   {"softmax_scale", scale},
                                                   {"is_causal", causal},
                                                   {"window_size_left", int64_t{-1}},
                                                   {"window_size_right", int64_t{-1}},
                                                   {"softcap", 0.0},
                                                   {"return_softmax", false}}));
        const at::Tensor expected =
            at::scaled_dot_product_attention(
                q.transpose(1, 2).to(at::kFloat), k.transpose(1, 2).to(at::kFloat),
                v.transpose(1, 2).to(at::kFloat), {}, 0.0, causal, scale)
                .transpose(1, 2);
        const double diff = max_abs_diff(outputs.at(0), expected);
        const double bound = dtype == at::kHalf ? 2.5e-3 : 2e-2;
        report.add("loader", label + " fwd " + c10::toString(dtype) + (causal ? " causal" : ""),
                   diff <= bound ? Status::pass : Status::fail,
                   "max |fwd - SDPA fp32| = " + format_number(diff, 3) + " (bound " +
                       format_number(bound, 2) + ")");
      }
    }
  } catch (const std::exception& error) {
    report.add("loader", label + " fwd call", Status::fail, error_text(error));
  }
}

}  // namespace

void check_loader(Report& report, const fs::path& fixtures, c10::Device device) {
  check_relu(report, fixtures, 1, device);
  check_relu(report, fixtures, 2, device);
  check_flash_fwd(report, fixtures, device);
}

}  // namespace kernelhub::gpu_check
