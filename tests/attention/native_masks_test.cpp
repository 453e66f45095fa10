// Mask conversions and varlen packing (kernelhub/attention/masks.hpp), checked
// element by element against loops over the mask, and packed attention against masked SDPA.
#include <cmath>
#include <vector>

#include <ATen/ops/cat.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/zeros.h>

#include "attention/native_reference.hpp"
#include "attention/semantics_errors.hpp"
#include "kernelhub/attention/masks.hpp"
#include "kernelhub/attention_dispatch.hpp"

// After the torch headers: c10/util/Logging.h defines a CHECK macro of its own.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
using kernelhub::testing::thrown;
namespace kd = kernelhub::attention::detail;
using Catch::Matchers::Equals;
using kernelhub::testing::max_abs_diff;
using kernelhub::testing::random_bool_mask;
using kernelhub::testing::random_qkv;
using kernelhub::testing::reference_attention;

namespace {

std::vector<int32_t> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kInt).contiguous();
  return {c.data_ptr<int32_t>(), c.data_ptr<int32_t>() + c.numel()};
}

}  // namespace

TEST_CASE("normalize_key_padding_mask follows Diffusers' rules and texts", "[attention][masks]") {
  const int64_t batch = 2, seq_k = 5;
  SECTION("only boolean masks") {
    CHECK_THAT(thrown<ka::InvalidInput>([&] {
                 kd::normalize_key_padding_mask(at::zeros({batch, seq_k}), batch, seq_k);
               }),
               Equals("Attention mask must be of type bool, got torch.float32."));
  }
  SECTION("1-D broadcasts over the batch") {
    const at::Tensor mask = random_bool_mask({seq_k});
    const at::Tensor out = kd::normalize_key_padding_mask(mask, batch, seq_k);
    REQUIRE(out.sizes() == at::IntArrayRef({batch, seq_k}));
    for (int64_t b = 0; b < batch; ++b) CHECK(out[b].equal(mask));
  }
  SECTION("2-D with batch 1 or B") {
    const at::Tensor one = random_bool_mask({1, seq_k});
    CHECK(kd::normalize_key_padding_mask(one, batch, seq_k)[1].equal(one[0]));
    const at::Tensor full = random_bool_mask({batch, seq_k});
    CHECK(kd::normalize_key_padding_mask(full, batch, seq_k).equal(full));
    CHECK_THAT(thrown<ka::InvalidInput>([&] {
                 kd::normalize_key_padding_mask(random_bool_mask({3, seq_k}), batch, seq_k);
               }),
               Equals("attn_mask.shape[0] (3) must be 1 or 2 for 2D attention mask."));
  }
  SECTION("3-D and 4-D keep a key when any query (and head) attends it") {
    const at::Tensor three = at::rand({batch, 4, seq_k}, kernelhub::testing::seeded(3)).gt(0.8);
    const at::Tensor four = at::rand({batch, 3, 4, seq_k}, kernelhub::testing::seeded(4)).gt(0.9);
    const at::Tensor n3 = kd::normalize_key_padding_mask(three, batch, seq_k);
    const at::Tensor n4 = kd::normalize_key_padding_mask(four, batch, seq_k);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t j = 0; j < seq_k; ++j) {
        bool any3 = false, any4 = false;
        for (int64_t i = 0; i < 4; ++i) {
          any3 = any3 || three[b][i][j].item<bool>();
          for (int64_t h = 0; h < 3; ++h) any4 = any4 || four[b][h][i][j].item<bool>();
        }
        CHECK(n3[b][j].item<bool>() == any3);
        CHECK(n4[b][j].item<bool>() == any4);
      }
    }
    CHECK_THAT(thrown<ka::InvalidInput>([&] {
                 kd::normalize_key_padding_mask(random_bool_mask({3, 4, seq_k}), batch, seq_k);
               }),
               Equals("attn_mask.shape[0] (3) must be 1 or 2 for 3D attention mask."));
  }
  SECTION("other ranks") {
    CHECK_THAT(
        thrown<ka::InvalidInput>([&] {
          kd::normalize_key_padding_mask(random_bool_mask({1, 1, 1, 1, seq_k}), batch, seq_k);
        }),
        Equals("Unsupported attention mask shape: torch.Size([1, 1, 1, 1, 5])"));
  }
}

TEST_CASE("sdpa_mask reshapes (B x Skv) padding masks only", "[attention][masks]") {
  const auto in = random_qkv(3, 4, 6, 2, 2, 8, at::kFloat);
  const at::Tensor padding = random_bool_mask({3, 6});
  CHECK(kd::sdpa_mask(padding, in.q, in.k)->sizes() == at::IntArrayRef({3, 1, 1, 6}));
  const at::Tensor query_key = random_bool_mask({4, 6});  // (Sq, Skv): SDPA broadcasts it
  CHECK(kd::sdpa_mask(query_key, in.q, in.k)->sizes() == at::IntArrayRef({4, 6}));
  CHECK_FALSE(kd::sdpa_mask(std::nullopt, in.q, in.k).has_value());
}

TEST_CASE("additive_mask maps true to 0 and false to -inf in the target dtype",
          "[attention][masks]") {
  const at::Tensor mask = random_bool_mask({2, 7});
  const at::Tensor additive = kd::additive_mask(mask, at::kBFloat16);
  CHECK(additive.scalar_type() == at::kBFloat16);
  for (int64_t i = 0; i < mask.numel(); ++i) {
    const float value = additive.flatten()[i].item<float>();
    if (mask.flatten()[i].item<bool>()) {
      CHECK(value == 0.0f);
    } else {
      CHECK((std::isinf(value) && value < 0));
    }
  }
  CHECK(kd::additive_mask(at::zeros({2, 7}), at::kHalf).scalar_type() == at::kHalf);
}

TEST_CASE("pack_varlen keeps the valid keys wherever they are", "[attention][masks][varlen]") {
  const int64_t batch = 3, seq_q = 4, seq_k = 9;
  const auto in = random_qkv(batch, seq_q, seq_k, 4, 2, 16, at::kFloat);

  SECTION("without a mask every sequence is full") {
    const kd::VarlenPack pack = kd::pack_varlen(in.q, in.k, in.v, std::nullopt);
    CHECK(to_vector(pack.cu_seqlens_q) == std::vector<int32_t>{0, 4, 8, 12});
    CHECK(to_vector(pack.cu_seqlens_k) == std::vector<int32_t>{0, 9, 18, 27});
    CHECK(pack.cu_seqlens_k.scalar_type() == at::kInt);
    CHECK(pack.max_seqlen_q == seq_q);
    CHECK(pack.max_seqlen_k == seq_k);
    CHECK(pack.key.equal(in.k.reshape({batch * seq_k, 2, 16})));
  }

  SECTION("a mask with holes") {
    const at::Tensor mask = random_bool_mask({batch, seq_k}, 11);
    const kd::VarlenPack pack = kd::pack_varlen(in.q, in.k, in.v, mask);
    std::vector<int32_t> cu{0};
    int32_t longest = 0;
    std::vector<at::Tensor> keys;
    for (int64_t b = 0; b < batch; ++b) {
      int32_t n = 0;
      for (int64_t j = 0; j < seq_k; ++j) {
        if (mask[b][j].item<bool>()) {
          keys.push_back(in.k[b][j]);
          ++n;
        }
      }
      cu.push_back(cu.back() + n);
      longest = std::max(longest, n);
    }
    CHECK(to_vector(pack.cu_seqlens_k) == cu);
    CHECK(pack.max_seqlen_k == longest);
    REQUIRE(pack.key.size(0) == static_cast<int64_t>(keys.size()));
    for (size_t i = 0; i < keys.size(); ++i) CHECK(pack.key[i].equal(keys[i]));

    // Attention per packed sequence equals masked attention over the padded batch.
    std::vector<at::Tensor> outputs;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t start = cu[b], length = cu[b + 1] - cu[b];
      const at::Tensor q = pack.query.narrow(0, b * seq_q, seq_q).transpose(0, 1);
      const at::Tensor k =
          pack.key.narrow(0, start, length).transpose(0, 1).repeat_interleave(2, 0);
      const at::Tensor v =
          pack.value.narrow(0, start, length).transpose(0, 1).repeat_interleave(2, 0);
      outputs.push_back(at::scaled_dot_product_attention(q, k, v).transpose(0, 1));
    }
    const at::Tensor packed_out = at::cat(outputs, 0);
    const at::Tensor out = kd::unpack_varlen_output(packed_out, pack);
    REQUIRE(out.sizes() == in.q.sizes());
    const auto expected = reference_attention(in, {.mask4d = mask.view({batch, 1, 1, seq_k})});
    CHECK(max_abs_diff(out, expected) <= 1e-5);
  }
}
