// Runs kernelhub::attention::dispatch_attention on tensors written by a conformance test and
// writes the output back, so Python can compare it with Diffusers' dispatch_attention_fn (or
// torch's flex_attention) on identical inputs. Linked against libkernelhub, the library apps
// use.
//   kh_attention_tool <spec.json>
//   kh_attention_tool --list-backends      (one name a line, list_backends() order)
// spec: {"query"|"key"|"value"|"attn_mask": {"file", "shape", "dtype"}, "dropout_p",
//        "is_causal", "scale", "enable_gqa", "backend", "output"}, optionally "lse_output"
//        (return_lse: the lse (B, H, Sq) float32 is written there) and "flex": {"mask_mod":
//        {"kind": causal|sliding_window|documents|prefix_lm, "window", "prefix", "documents"},
//        "bias"} to call kernelhub's flex_attention with those C++ mask/score functions.
#include <kernelhub/attention_dispatch.hpp>
#include <kernelhub/flex_attention.hpp>

#include <ATen/ops/empty.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensor_file.hpp"

namespace {

using kernelhub::conformance::read_tensor;
using kernelhub::conformance::write_tensor;

namespace ka = kernelhub::attention;

// The mask_mods of the conformance suite, as torch's flex_attention examples write them.
ka::MaskMod mask_mod_of(const nlohmann::json& spec) {
  const auto kind = spec.at("kind").get<std::string>();
  if (kind == "causal") {
    return [](const at::Tensor&, const at::Tensor&, const at::Tensor& q, const at::Tensor& kv) {
      return q.ge(kv);
    };
  }
  if (kind == "sliding_window") {
    const int64_t window = spec.at("window");
    return [window](const at::Tensor&, const at::Tensor&, const at::Tensor& q,
                    const at::Tensor& kv) { return q.ge(kv).logical_and(q.sub(kv).lt(window)); };
  }
  if (kind == "prefix_lm") {
    const int64_t prefix = spec.at("prefix");
    return [prefix](const at::Tensor&, const at::Tensor&, const at::Tensor& q,
                    const at::Tensor& kv) { return kv.lt(prefix).logical_or(q.ge(kv)); };
  }
  if (kind == "documents") {  // packed documents: attend within one's own document
    const at::Tensor doc = read_tensor(spec.at("documents"));
    return [doc](const at::Tensor&, const at::Tensor&, const at::Tensor& q, const at::Tensor& kv) {
      return doc.index({q}).eq(doc.index({kv}));
    };
  }
  throw std::invalid_argument("unknown mask_mod kind " + kind);
}

ka::AttentionWithLse run_flex(const nlohmann::json& spec, const at::Tensor& q, const at::Tensor& k,
                              const at::Tensor& v) {
  const auto& flex = spec.at("flex");
  ka::FlexOptions options;
  if (!spec.at("scale").is_null()) options.scale = spec.at("scale").get<double>();
  options.enable_gqa = spec.at("enable_gqa");
  if (flex.contains("mask_mod")) {
    options.block_mask = ka::BlockMask::from_mask_mod(mask_mod_of(flex.at("mask_mod")), q.size(0),
                                                      q.size(2), q.size(1), k.size(1));
  }
  if (flex.contains("bias")) {
    const at::Tensor bias = read_tensor(flex.at("bias"));  // (B, H, Sq, Skv)
    options.score_mod = [bias](const at::Tensor& score, const at::Tensor& b, const at::Tensor& h,
                               const at::Tensor& qi, const at::Tensor& kv) {
      return score.add(bias.index({b, h, qi, kv}));
    };
  }
  return ka::flex_attention(q, k, v, options);
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
    const at::Tensor q = read_tensor(spec.at("query"));
    const at::Tensor k = read_tensor(spec.at("key"));
    const at::Tensor v = read_tensor(spec.at("value"));
    ka::AttentionWithLse result;
    if (spec.contains("flex")) {
      result = run_flex(spec, q, k, v);
    } else {
      ka::AttentionOptions options;
      if (!spec.at("attn_mask").is_null()) options.attn_mask = read_tensor(spec.at("attn_mask"));
      options.dropout_p = spec.at("dropout_p");
      options.is_causal = spec.at("is_causal");
      if (!spec.at("scale").is_null()) options.scale = spec.at("scale").get<double>();
      options.enable_gqa = spec.at("enable_gqa");
      options.backend = spec.at("backend").get<std::string>();
      result = spec.contains("lse_output")
                   ? ka::dispatch_attention_with_lse(q, k, v, options)
                   : ka::AttentionWithLse{ka::dispatch_attention(q, k, v, options), {}};
    }
    write_tensor(result.out, spec.at("output"));
    if (spec.contains("lse_output")) write_tensor(result.lse, spec.at("lse_output"));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kh_attention_tool: %s\n", e.what());
    return 1;
  }
}
