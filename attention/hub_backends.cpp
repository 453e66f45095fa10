// The *_hub backends: kernels fetched from the Hub (through kernelhubd, or embedded),
// verified and dlopen'ed by the loader, called through their published op schemas. Repos
// and versions follow Diffusers 0.42.1's hub kernel registry.
#include <cstdint>
#include <memory>
#include <string>

#include "flash_kernels.hpp"
#include "kernelhub/attention/backend.hpp"
#include "kernelhub/attention/checks.hpp"
#include "kernelhub/attention/kernel_provider.hpp"
#include "kernelhub/attention/lazy_op.hpp"
#include "kernelhub/attention/requirements.hpp"
#include "kernelhub/attention/sage_kernel.hpp"
#include "kernelhub/loader/kernel_ops.hpp"

namespace kernelhub::attention::detail {
namespace {

std::shared_ptr<LazyOp> hub_op(std::string_view backend, std::string_view repo,
                               std::uint64_t version, std::string op) {
  HubKernelSpec spec{backend, repo, version};
  return std::make_shared<LazyOp>(
      std::string(backend), [spec] { return provide_hub_kernel(spec); }, std::move(op));
}

constexpr std::string_view kFlash2Repo = "kernels-community/flash-attn2";
constexpr std::string_view kFlash3Repo = "kernels-community/flash-attn3";
constexpr std::string_view kSageRepo = "SageAttention/sage-attention";

Backend sage_backend(const std::shared_ptr<SageKernel>& sage) {
  Backend backend;
  backend.name = "sage_hub";
  // Diffusers also requires a CUDA device; here the kernel decides: its ops must have an
  // implementation for the tensors' device (checked per call by the SageKernel).
  backend.constraints = {check_device, check_qkv_dtype_bf16_or_fp16, check_shape};
  backend.honours = {
      .attn_mask = false, .dropout_p = false, .is_causal = true, .scale = true, .enable_gqa = true};
  backend.mask_refusal = "`attn_mask` is not supported for sage attention.";
  backend.activate = [sage] {
    sage->activate([] { return provide_hub_kernel({"sage_hub", kSageRepo, 3}); });
  };
  backend.run = [sage](const AttentionInputs& inputs) { return sage->forward(inputs); };
  backend.run_with_lse = [sage](const AttentionInputs& inputs) {
    return sage->forward_with_lse(inputs);
  };
  return backend;
}

}  // namespace

void register_hub_backends(std::vector<Backend>& table) {
  auto flash2_fwd = hub_op("flash_hub", kFlash2Repo, 3, "fwd");
  auto flash2_varlen = hub_op("flash_varlen_hub", kFlash2Repo, 3, "varlen_fwd");
  auto flash3 = hub_op("_flash_3_hub", kFlash3Repo, 1, "fwd");
  auto flash3_varlen = hub_op("_flash_3_varlen_hub", kFlash3Repo, 1, "fwd");

  table.push_back(make_flash2_backend("flash_hub", flash2_fwd, false));
  table.push_back(make_flash2_backend("flash_varlen_hub", flash2_varlen, true));
  table.push_back(make_flash3_backend("_flash_3_hub", flash3, false));
  table.push_back(make_flash3_backend("_flash_3_varlen_hub", flash3_varlen, true));
  table.push_back(sage_backend(std::make_shared<SageKernel>("sage_hub")));

  // ROCm: the CK build of flash-attention 2 exports FA2's `fwd` schema.
  auto aiter = hub_op("aiter_fa2_hub", "kernels-community/aiter-flash-attn-ck", 1, "fwd");
  Backend aiter_backend = make_flash2_backend("aiter_fa2_hub", aiter, false);
  aiter_backend.constraints = {check_device_cuda, check_qkv_dtype_bf16, check_shape};
  aiter_backend.mask_refusal = "`attn_mask` is not supported for aiter attention.";
  aiter_backend.activate = [aiter] {
    require_rocm("aiter_fa2_hub");
    aiter->activate();
  };
  table.push_back(std::move(aiter_backend));
}

}  // namespace kernelhub::attention::detail
