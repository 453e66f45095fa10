// Every dispatcher backend on the GPU against ATen SDPA in fp32 on the same device, with the
// CPU suites' tolerances (tests/attention): fp16 2.5e-3, bf16 2e-2, int8-QK sage 6e-2, and
// fp8-PV sage 0.15 max / 0.02 mean.
#include <kernelhub/attention_dispatch.hpp>

#include <ATen/TensorOperators.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/scaled_dot_product_attention.h>

#include <algorithm>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "tests/gpu/gpu_check.hpp"

namespace kernelhub::gpu_check {
namespace {

namespace ka = kernelhub::attention;

struct Case {
  std::string name;
  at::ScalarType dtype;
  int64_t heads_kv;  // 8 = no GQA
  int64_t head_dim;
  bool causal;
  bool key_mask;  // a (B, Skv) key-padding mask with holes: the varlen path
};

constexpr int64_t kBatch = 2;
constexpr int64_t kSeq = 256;
constexpr int64_t kHeads = 8;

std::vector<Case> cases() {
  std::vector<Case> all;
  for (auto dtype : {at::kHalf, at::kBFloat16}) {
    const std::string type = dtype == at::kHalf ? "fp16" : "bf16";
    all.push_back({type + " plain D128", dtype, kHeads, 128, false, false});
    all.push_back({type + " GQA 8/2", dtype, 2, 64, false, false});
    all.push_back({type + " causal", dtype, kHeads, 64, true, false});
    all.push_back({type + " varlen mask", dtype, kHeads, 64, false, true});
  }
  return all;
}

// Backends a GPU of compute capability `sm` (80, 90, ...; 0: the CPU) with the fixture
// builds must run: none of them may be n/a for want of a device, runtime or kernel.
std::set<std::string> must_run(int sm) {
  // flash_4_hub, sage_blackwell_hub, aiter_fa2_hub, sage_varlen, the Triton sage path, npu
  // and xla are refused or need other hardware; every other backend runs somewhere.
  std::set<std::string> names = {
      "flash",    "flash_hub",       "flash_varlen",  "flash_varlen_hub",
      "_flash_3", "_flash_varlen_3", "_flash_3_hub",  "_flash_3_varlen_hub",
      "flex",     "native",          "_native_flash", "_native_math",
      "sage",     "sage_hub",        "xformers"};
  if (sm >= 80) {
    names.insert({"_native_cudnn", "_native_efficient", "_sage_qk_int8_pv_fp16_cuda"});
  }
  if (sm >= 90) names.insert({"_sage_qk_int8_pv_fp8_cuda", "_sage_qk_int8_pv_fp8_cuda_sm90"});
  return names;
}

struct Bounds {
  double max;
  double mean;  // 1.0: unchecked
};

Bounds bounds_for(const std::string& backend, at::ScalarType dtype) {
  if (backend.find("pv_fp8") != std::string::npos) return {0.15, 0.02};
  if (backend.find("sage") != std::string::npos) return {6e-2, 1.0};
  return {dtype == at::kHalf ? 2.5e-3 : 2e-2, 1.0};
}

// SDPA in fp32 on the same device, on (B, S, H, D) tensors.
at::Tensor reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const Case& c,
                     const std::optional<at::Tensor>& mask) {
  const int64_t groups = kHeads / c.heads_kv;
  auto heads_first = [&](const at::Tensor& t, bool repeat) {
    at::Tensor out = t.transpose(1, 2).to(at::kFloat);
    return repeat && groups > 1 ? at::repeat_interleave(out, groups, 1) : out;
  };
  std::optional<at::Tensor> sdpa_mask;
  if (mask) sdpa_mask = mask->view({kBatch, 1, 1, kSeq});
  return at::scaled_dot_product_attention(heads_first(q, false), heads_first(k, true),
                                          heads_first(v, true), sdpa_mask, 0.0, c.causal)
      .transpose(1, 2);
}

// One backend, one case: the row it adds. Returns whether it ran and passed.
bool run_case(Report& report, const std::string& backend, const Case& c, c10::Device device) {
  const std::string subject = backend + " " + c.name;
  at::manual_seed(7);
  const auto options = at::TensorOptions().device(device).dtype(c.dtype);
  const at::Tensor q = at::randn({kBatch, kSeq, kHeads, c.head_dim}, options);
  const at::Tensor k = at::randn({kBatch, kSeq, c.heads_kv, c.head_dim}, options);
  const at::Tensor v = at::randn({kBatch, kSeq, c.heads_kv, c.head_dim}, options);
  std::optional<at::Tensor> mask;
  if (c.key_mask) {
    at::Tensor m = at::rand({kBatch, kSeq}, at::TensorOptions().device(device)) > 0.35;
    m.select(1, 0).fill_(true);  // every query sees at least one key
    mask = m;
  }
  ka::AttentionOptions call;
  call.backend = backend;
  call.is_causal = c.causal;
  call.enable_gqa = c.heads_kv != kHeads;
  call.attn_mask = mask;
  try {
    const at::Tensor out = ka::dispatch_attention(q, k, v, call);
    if (out.device() != device || out.scalar_type() != c.dtype) {
      report.add("backend", subject, Status::fail,
                 "output on " + out.device().str() + " in " + c10::toString(out.scalar_type()));
      return false;
    }
    const at::Tensor error = (out.to(at::kFloat) - reference(q, k, v, c, mask)).abs();
    const auto max = error.max().item<double>();
    const auto mean = error.mean().item<double>();
    const Bounds bounds = bounds_for(backend, c.dtype);
    const bool ok = max <= bounds.max && mean <= bounds.mean;
    std::string detail =
        "max " + format_number(max, 3) + " (bound " + format_number(bounds.max, 2) + ")";
    if (bounds.mean < 1.0) {
      detail +=
          ", mean " + format_number(mean, 3) + " (bound " + format_number(bounds.mean, 2) + ")";
    }
    report.add("backend", subject, ok ? Status::pass : Status::fail, detail);
    return ok;
  } catch (const ka::UnsupportedArgument& error) {
    report.add("backend", subject, Status::not_applicable, error_text(error));
  } catch (const ka::InvalidInput& error) {
    report.add("backend", subject, Status::not_applicable, error_text(error));
  } catch (const std::exception& error) {
    report.add("backend", subject, Status::fail, error_text(error));
  }
  return false;
}

}  // namespace

void check_backends(Report& report, int sm, c10::Device device) {
  const auto all_cases = cases();
  const auto required = must_run(sm);
  for (const auto& backend : ka::list_backends()) {
    const bool must_run = required.count(backend) > 0;
    try {
      ka::BackendGuard guard(backend);  // activation: device and runtime checks, kernel load
    } catch (const ka::BackendUnavailable& error) {
      report.add("backend", backend, must_run ? Status::fail : Status::not_applicable,
                 error_text(error));
      continue;
    } catch (const std::exception& error) {
      report.add("backend", backend, Status::fail, error_text(error));
      continue;
    }
    int passed = 0;
    for (const auto& c : all_cases) passed += run_case(report, backend, c, device) ? 1 : 0;
    if (must_run && passed == 0) {
      report.add("backend", backend, Status::fail,
                 "no case ran on this " +
                     (sm == 0 ? std::string("CPU") : "sm" + std::to_string(sm) + " GPU"));
    }
  }
}

}  // namespace kernelhub::gpu_check
