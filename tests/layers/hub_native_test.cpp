// kernelize with the native fixture layer kernels from the fixture Hub store: the Llama block
// from a mapping file, each activation, the norms and rotary, the built-in mapping, a
// lockfile and a local build. Each proves the kernel's ops ran (OpRecorder) and compares
// with the modules' own ATen forwards.
#include <ATen/ops/randn.h>
#include <nlohmann/json.hpp>

#include "attention/hub_environment.hpp"
#include "kernelhub/kernelize.hpp"
#include "layers/layer_support.hpp"
#include "torch_support/llama_block.hpp"

#include <catch2/catch.hpp>

namespace fs = std::filesystem;
namespace kl = kernelhub::layers;
using kernelhub::testing::all_close;
using kernelhub::testing::HubEnvironment;
using kernelhub::testing::mapping_entry;
using kernelhub::testing::OpRecorder;
using kernelhub::testing::TempDir;
using kernelhub::testing::write_file;
using kl::Mode;

namespace {

// The fixture kernels compute with the same float32 ATen operations as the modules: the
// differences measured on these shapes are 0 (bench/layers_bench prints the block's). The
// tolerance leaves room for a build that sums in another order.
constexpr double kFp32Tolerance = 2e-6;

constexpr const char* kBlockMapping = R"(
[[layers]]
name = "RMSNorm"
device = "cpu"
repo = "kernels-community/rmsnorm"
layer = "RMSNorm"
version = 1

[[layers]]
name = "SiluAndMul"
device = "cpu"
repo = "kernels-community/activation"
layer = "SiluAndMul"
version = 1

[[layers]]
name = "rotary_pos_emb"
device = "cpu"
repo = "kernels-community/rotary"
layer = "apply_rotary_transformers"
version = 2
)";

}  // namespace

TEST_CASE("a Llama block kernelized from a mapping file equals the plain block", "[layers_hub]") {
  HubEnvironment hub;
  TempDir dir;
  const auto mapping =
      kl::KernelMapping::from_file(write_file(dir.path() / "layers.toml", kBlockMapping));
  kernelhub::testing::LlamaBlock plain(64, 4, 128);
  auto kernelized = std::dynamic_pointer_cast<kernelhub::testing::LlamaBlockImpl>(plain->clone());
  const auto report = kl::kernelize(*kernelized, mapping, {.mode = Mode::inference});

  REQUIRE(report.layers.size() == 4);
  CHECK(report.bound_count() == 4);
  for (const auto& layer : report.layers) {
    INFO(layer.module << " " << layer.fallback_reason);
    CHECK(layer.bound);
    CHECK_THAT(layer.kernel, Catch::EndsWith(", native"));
  }
  CHECK(report.layers[0].module == "input_norm");
  CHECK(report.layers[1].module == "rotary");
  CHECK(report.layers[2].module == "post_norm");
  CHECK(report.layers[3].module == "act");
  CHECK_THAT(report.layers[3].kernel, Catch::StartsWith("kernels-community/activation@") &&
                                          Catch::Contains("layers.SiluAndMul"));

  const at::Tensor x = at::randn({2, 6, 64});
  const auto [cos, sin] = kernelhub::testing::rotary_tables(2, 6, 16);
  const at::Tensor expected = plain->forward(x, cos, sin);
  OpRecorder all("_");  // the fixtures' namespaces (_rmsnorm_cpu_..., ...), not aten::
  const at::Tensor out = kernelized->forward(x, cos, sin);
  CHECK(all.count("apply_rms_norm") == 2);
  CHECK(all.count("silu_and_mul") == 1);
  CHECK(all.count("apply_rotary") == 2);  // q and k
  INFO("max abs difference " << (out - expected).abs().max().item<double>());
  CHECK(all_close(out, expected, kFp32Tolerance * 10));  // through two residual adds
}

TEST_CASE("every activation layer binds to activation's op and matches ATen", "[layers_hub]") {
  HubEnvironment hub;
  struct Case {
    std::shared_ptr<torch::nn::Module> module;
    std::string layer;  // the class in activation's layers.py
    std::string op;
    std::function<at::Tensor(const at::Tensor&)> run;
  };
  kl::SiluAndMul silu_and_mul;
  kl::GeluAndMul gelu_and_mul;
  kl::GeluTanhAndMul gelu_tanh_and_mul;
  kl::Silu silu;
  kl::Gelu gelu;
  kl::GeluTanh gelu_tanh;
  kl::FastGELU fast;
  kl::NewGELU new_gelu;
  kl::QuickGELU quick;
  const std::vector<Case> cases = {
      {silu_and_mul.ptr(), "SiluAndMul", "silu_and_mul", [&](auto& x) { return silu_and_mul(x); }},
      {gelu_and_mul.ptr(), "GeluAndMul", "gelu_and_mul", [&](auto& x) { return gelu_and_mul(x); }},
      {gelu_tanh_and_mul.ptr(), "GeluTanhAndMul", "gelu_tanh_and_mul",
       [&](auto& x) { return gelu_tanh_and_mul(x); }},
      {silu.ptr(), "Silu", "silu", [&](auto& x) { return silu(x); }},
      {gelu.ptr(), "Gelu", "gelu", [&](auto& x) { return gelu(x); }},
      {gelu_tanh.ptr(), "GeluTanh", "gelu_tanh", [&](auto& x) { return gelu_tanh(x); }},
      {fast.ptr(), "FastGELU", "gelu_fast", [&](auto& x) { return fast(x); }},
      {new_gelu.ptr(), "NewGELU", "gelu_new", [&](auto& x) { return new_gelu(x); }},
      {quick.ptr(), "QuickGELU", "gelu_quick", [&](auto& x) { return quick(x); }},
  };
  // A non-contiguous input: the layer makes it contiguous as activation's layers.py does.
  const at::Tensor x = at::randn({5, 3, 32}).transpose(0, 1);
  for (const auto& c : cases) {
    auto* layer = dynamic_cast<kl::KernelizableLayer*>(c.module.get());
    REQUIRE(layer != nullptr);
    INFO(layer->kernel_layer_name() << " -> " << c.layer);
    const at::Tensor expected = c.run(x);
    kl::KernelMapping mapping;
    mapping.add(layer->kernel_layer_name(), {"cpu"},
                kl::hub_layer("kernels-community/activation", c.layer, 1));
    const auto report = kl::kernelize(*c.module, mapping, {.device = "cpu"});
    REQUIRE(report.bound_count() == 1);
    OpRecorder ops("_activation_");
    const at::Tensor out = c.run(x);
    CHECK(ops.count(c.op) == 1);
    CHECK(out.sizes() == expected.sizes());
    CHECK(all_close(out, expected, kFp32Tolerance));
  }
}

TEST_CASE("layer-norm's LlamaRMSNorm and LayerNorm bind and match ATen", "[layers_hub]") {
  HubEnvironment hub;
  kl::RMSNorm rms(kl::RMSNormOptions(48).eps(1e-5));
  rms->weight.data().copy_(at::randn({48}));
  kl::LayerNorm ln(kl::LayerNormOptions(48).eps(1e-5));
  ln->weight.data().copy_(at::randn({48}));
  ln->bias.data().copy_(at::randn({48}));
  const at::Tensor x = at::randn({3, 7, 48});
  const at::Tensor rms_expected = rms(x);
  const at::Tensor ln_expected = ln(x);

  kl::KernelMapping mapping;
  mapping.add("RMSNorm", {"cpu"}, kl::hub_layer("kernels-community/layer-norm", "LlamaRMSNorm", 1));
  mapping.add("LayerNorm", {"cpu"}, kl::hub_layer("kernels-community/layer-norm", "LayerNorm", 1));
  REQUIRE(kl::kernelize(*rms, mapping, {.device = "cpu"}).bound_count() == 1);
  REQUIRE(kl::kernelize(*ln, mapping, {.device = "cpu"}).bound_count() == 1);
  OpRecorder ops("_layer_norm_");
  CHECK(all_close(rms(x), rms_expected, kFp32Tolerance * 4));
  // The module's bias reaches the op (upstream's LayerNorm layer passes beta=None).
  CHECK(all_close(ln(x), ln_expected, kFp32Tolerance * 4));
  CHECK(ops.count("dropout_add_ln_fwd") == 2);
}

TEST_CASE("rotary's apply_rotary_transformers matches apply_rotary_pos_emb", "[layers_hub]") {
  HubEnvironment hub;
  kl::ApplyRotary rotary;
  const at::Tensor q = at::randn({2, 4, 6, 32});
  const at::Tensor k = at::randn({2, 4, 6, 32});
  const auto [cos, sin] = kernelhub::testing::rotary_tables(2, 6, 32);
  const auto [q_expected, k_expected] = rotary(q, k, cos, sin);
  kl::KernelMapping mapping;
  mapping.add("rotary_pos_emb", {"cpu"},
              kl::hub_layer("kernels-community/rotary", "apply_rotary_transformers", 2));
  REQUIRE(kl::kernelize(*rotary, mapping, {.device = "cpu"}).bound_count() == 1);
  OpRecorder ops("_rotary_");
  const at::Tensor q_before = q.clone();
  const auto [q_out, k_out] = rotary(q, k, cos, sin);
  CHECK(ops.count("apply_rotary") == 2);
  CHECK(all_close(q_out, q_expected, kFp32Tolerance));
  CHECK(all_close(k_out, k_expected, kFp32Tolerance));
  CHECK(at::equal(q, q_before));  // the inputs are cloned, never rotated in place
}

TEST_CASE("the built-in mapping binds SiLU on cuda for inference", "[layers_hub]") {
  HubEnvironment hub;
  kl::Silu silu;
  // A GPU host asks for device cuda; the variant the fetcher picks is this process's (here
  // the CPU build), so the test runs the kernel on CPU tensors.
  const auto report = kl::kernelize(*silu, kl::KernelMapping::builtin(),
                                    {.mode = Mode::inference, .device = "cuda", .capability = 90});
  REQUIRE(report.bound_count() == 1);
  CHECK(report.layers[0].repository_mode == (Mode::inference | Mode::torch_compile));
  const at::Tensor x = at::randn({4, 16});
  OpRecorder ops("_activation_");
  CHECK(all_close(silu(x), x * x.sigmoid(), kFp32Tolerance));
  CHECK(ops.count("silu") == 1);
}

TEST_CASE("a locked layer is fetched at the commit its lockfile pins", "[layers_hub]") {
  HubEnvironment hub;
  TempDir dir;
  std::ofstream(dir.path() / "kernelhub.toml")
      << "[tool.kernels.dependencies]\n\"kernels-community/activation\" = 1\n";
  const fs::path lock = dir.path() / "kernels.lock";
  const auto locked = kernelhub::testing::run_command(
      {std::string(KH_BIN_DIR) + "/kernelhub", "lock", dir.path().string(), "-o", lock.string()},
      {{"HF_ENDPOINT", hub.endpoint()}});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  std::ifstream in(lock);
  const std::string commit = nlohmann::json::parse(in)[0]["lock"]["commit"];

  const auto mapping_file = write_file(dir.path() / "layers.toml",
                                       mapping_entry("SiluAndMul", "kernels-community/activation",
                                                     "SiluAndMul", "lockfile = \"kernels.lock\""));
  kl::SiluAndMul act;
  const auto report =
      kl::kernelize(*act, kl::KernelMapping::from_file(mapping_file), {.device = "cpu"});
  REQUIRE(report.bound_count() == 1);
  CHECK_THAT(report.layers[0].kernel, Catch::Contains("@" + commit.substr(0, 12)));
  CHECK(fs::exists(hub.cache() / "kernels--kernels-community--activation" / "snapshots" / commit));

  // A repo the lock does not name is refused, never fetched unpinned.
  kl::RMSNorm norm(kl::RMSNormOptions(8));
  kl::KernelMapping other;
  other.add("RMSNorm", {"cpu"}, kl::locked_layer("kernels-community/rmsnorm", "RMSNorm", lock));
  CHECK_THROWS_WITH(kl::kernelize(*norm, other, {.device = "cpu"}),
                    Catch::Contains("kernels-community/rmsnorm is not in the lockfile"));
  // locked_layer without a path needs a lockfile in force.
  kl::KernelMapping in_force;
  in_force.add("RMSNorm", {"cpu"}, kl::locked_layer("kernels-community/rmsnorm", "RMSNorm"));
  CHECK_THROWS_WITH(kl::kernelize(*norm, in_force, {.device = "cpu"}),
                    Catch::Contains("no lockfile is in force"));
  CHECK_FALSE(fs::exists(hub.cache() / "kernels--kernels-community--rmsnorm" / "snapshots"));
}

TEST_CASE("a local layer build binds without the Hub", "[layers_hub]") {
  HubEnvironment hub;
  const fs::path source = kernelhub::testing::fixture_root() / "src" / "activation-v1";
  kl::KernelMapping mapping;
  mapping.add("SiluAndMul", {"cpu"}, kl::local_layer(source, "SiluAndMul"));
  kl::SiluAndMul act;
  const auto report = kl::kernelize(*act, mapping, {.device = "cpu"});
  REQUIRE(report.bound_count() == 1);
  CHECK_THAT(report.layers[0].kernel, Catch::StartsWith(source.string()));
  const at::Tensor x = at::randn({3, 8});
  OpRecorder ops("_activation_");
  CHECK(all_close(act(x), kl::aten_activation(kl::Activation::silu_and_mul, x), kFp32Tolerance));
  CHECK(ops.count("silu_and_mul") == 1);
  CHECK_FALSE(fs::exists(hub.cache() / "kernels--kernels-community--activation"));
}

TEST_CASE("a layer's kernel comes through kernelhubd when one runs", "[layers_hub][daemon]") {
  HubEnvironment hub({.with_daemon = true});
  kl::SiluAndMul act;
  kl::KernelMapping mapping;
  mapping.add("SiluAndMul", {"cpu"},
              kl::hub_layer("kernels-community/activation", "SiluAndMul", 1));
  const auto report = kl::kernelize(*act, mapping, {.device = "cpu"});
  REQUIRE(report.bound_count() == 1);
  // kernelhubd filled its cache (the client's environment requires the daemon).
  CHECK(fs::exists(hub.cache() / "kernels--kernels-community--activation" / "snapshots"));
  const at::Tensor x = at::randn({2, 8});
  OpRecorder ops("_activation_");
  CHECK(all_close(act(x), kl::aten_activation(kl::Activation::silu_and_mul, x), kFp32Tolerance));
  CHECK(ops.count("silu_and_mul") == 1);
}
