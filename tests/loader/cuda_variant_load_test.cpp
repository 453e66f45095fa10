// The CUDA fixture variants in a process whose libtorch has CUDA (this binary links
// libtorch_cuda and libc10_cuda) and that needs no GPU: the dependency scan accepts them, they
// load without Python, their ops are in the c10 dispatcher with CUDA kernels and the published
// schemas, and a call fails with torch's CUDA error when there is no GPU (or, on a GPU host,
// computes what ATen computes). The attention fixtures' CUDA variants (flash-attn3,
// sage-attention, and the local flash-attn, flash-attn3, sageattention and xformers library
// builds) likewise: CUDA kernels with the CPU builds' schemas, and clear errors without a GPU.
#include <ATen/Context.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <dlfcn.h>
#include <fcntl.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/loader/kernel_ops.hpp"
#include "kernelhub/loader/load_order.hpp"
#include "kernelhub/util/unique_fd.hpp"
#include "loader/loader_test_support.hpp"

using namespace kernelhub;
using namespace kernelhub::loader;
using Catch::Matchers::Contains;

namespace {

std::shared_ptr<const LoadedKernel> load_cuda_fixture(const std::string& name, int version) {
  return testing::load_local(testing::fixture_cuda_variant_dir(name, version),
                             "local:" + name + "-cuda");
}

KernelOp find_op(const LoadedKernel& kernel, const std::string& name) {
  auto op = KernelOp::find(kernel, name);
  INFO(name << ": " << (op ? std::string() : op.error().message));
  REQUIRE(op);
  return *op;
}

// The schema without its namespace: the CPU and CUDA builds differ only there.
std::string schema_text(const KernelOp& op) {
  std::ostringstream out;
  out << op.schema();
  const std::string text = out.str();
  return text.substr(text.find("::") + 2);
}

// A tensor that claims to live on cuda:0 over host memory: the one way, without a GPU, to
// make the dispatcher pick the CUDA kernel (at::empty on CUDA fails before any op runs).
at::Tensor claimed_cuda(std::vector<float>& host) {
  const at::Device cuda0(at::kCUDA, 0);
  return at::for_blob(host.data(), {static_cast<int64_t>(host.size())})
      .options(at::TensorOptions().dtype(at::kFloat).device(cuda0))
      .target_device(cuda0)
      .make_tensor();
}

// Tensors that claim to live on cuda:0 over zeroed host memory, kept alive by the maker.
class ClaimedCuda {
 public:
  at::Tensor operator()(at::IntArrayRef sizes, at::ScalarType dtype) {
    int64_t numel = 1;
    for (const int64_t size : sizes) numel *= size;
    auto& host = buffers_.emplace_back(static_cast<std::size_t>(numel) * c10::elementSize(dtype),
                                       std::byte{0});
    const at::Device cuda0(at::kCUDA, 0);
    return at::for_blob(host.data(), sizes)
        .options(at::TensorOptions().dtype(dtype).device(cuda0))
        .target_device(cuda0)
        .make_tensor();
  }

 private:
  std::deque<std::vector<std::byte>> buffers_;
};

using MakeTensor = std::function<at::Tensor(at::IntArrayRef, at::ScalarType)>;

// One attention fixture build with a CUDA variant beside its CPU one: where it lies, its
// namespace prefix, its ops, and one call of an op with inputs from `make`.
struct AttentionBuild {
  std::string label;
  std::filesystem::path kernel_dir;  // holds build/<variant>/
  std::string ns_prefix;             // of the CUDA build
  std::vector<std::string> ops;
  std::string sample_op;
  std::function<std::vector<c10::IValue>(const MakeTensor&)> sample_args;
  bool reference_math;  // the ATen reference math (else the tiled CUDA kernel of flash-attn2)
};

std::vector<c10::IValue> flash3_args(const MakeTensor& make) {
  return {make({1, 16, 2, 64}, at::kFloat), make({1, 16, 2, 64}, at::kFloat),
          make({1, 16, 2, 64}, at::kFloat)};
}

std::vector<c10::IValue> flash2_args(const MakeTensor& make) {
  return {make({1, 16, 2, 64}, at::kFloat),
          make({1, 16, 2, 64}, at::kFloat),
          make({1, 16, 2, 64}, at::kFloat),
          c10::IValue(),
          c10::IValue(),
          0.0,
          0.125,
          true,
          -1,
          -1,
          0.0,
          false,
          c10::IValue()};
}

std::vector<c10::IValue> xformers_args(const MakeTensor& make) {
  return {make({1, 16, 2, 64}, at::kFloat),
          make({1, 16, 2, 64}, at::kFloat),
          make({1, 16, 2, 64}, at::kFloat),
          c10::IValue(),
          0.0,
          c10::IValue(),
          false};
}

// quant_per_block_int8_cuda(input (B, S, H, D) fp16, output int8, scale (B, H, blocks), ...)
std::vector<c10::IValue> sage_args(const MakeTensor& make) {
  return {make({1, 64, 2, 64}, at::kHalf),
          make({1, 64, 2, 64}, at::kChar),
          make({1, 2, 1}, at::kFloat),
          1.0,
          int64_t{64},
          int64_t{0}};
}

const std::vector<std::string> kSageOps = {
    "quant_per_block_int8_cuda",
    "quant_per_block_int8_fuse_sub_mean_cuda",
    "quant_per_warp_int8_cuda",
    "qk_int8_sv_f16_accum_f32_attn",
    "transpose_pad_permute_cuda",
    "scale_fuse_quant_cuda",
    "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn",
    "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf_sm90"};

std::vector<AttentionBuild> attention_builds() {
  const std::filesystem::path local = std::filesystem::path(KH_BUILD_DIR) / "fixtures" / "local";
  return {
      {"flash-attn3 v1",
       testing::fixture_kernel_dir("flash-attn3", 1),
       "_flash_attn3_cuda_",
       {"fwd"},
       "fwd",
       flash3_args,
       true},
      {"sage-attention v3", testing::fixture_kernel_dir("sage-attention", 3),
       "_sage_attention_cuda_", kSageOps, "quant_per_block_int8_cuda", sage_args, true},
      {"local flash-attn 2.8.3",
       local / "flash-attn",
       "_flash_attn_cuda_",
       {"fwd", "varlen_fwd"},
       "fwd",
       flash2_args,
       false},
      {"local flash-attn 2.5.0",
       local / "flash-attn-old",
       "_flash_attn_old_cuda_",
       {"fwd", "varlen_fwd"},
       "fwd",
       flash2_args,
       false},
      {"local flash-attn3 3.0.0b1",
       local / "flash-attn3",
       "_flash_attn3_cuda_",
       {"fwd"},
       "fwd",
       flash3_args,
       true},
      {"local sageattention 2.2.0", local / "sageattention", "_sageattention_cuda_", kSageOps,
       "quant_per_block_int8_cuda", sage_args, true},
      {"local xformers 0.0.32",
       local / "xformers",
       "_xformers_cuda_",
       {"efficient_attention_forward"},
       "efficient_attention_forward",
       xformers_args,
       true},
  };
}

std::shared_ptr<const LoadedKernel> load_build(const AttentionBuild& build, bool cuda) {
  const auto dir =
      build.kernel_dir / "build" / (cuda ? KH_FIXTURE_CUDA_VARIANT : KH_FIXTURE_VARIANT);
  INFO(dir.string());
  REQUIRE(std::filesystem::is_regular_file(dir / "metadata.json"));
  return testing::load_local(dir, "local:" + build.label + (cuda ? " (cuda)" : " (cpu)"));
}

nlohmann::json read_metadata(const AttentionBuild& build, bool cuda) {
  std::ifstream in(build.kernel_dir / "build" /
                   (cuda ? KH_FIXTURE_CUDA_VARIANT : KH_FIXTURE_VARIANT) / "metadata.json");
  return nlohmann::json::parse(in);
}

// Every tensor a call left behind: its outputs, then its (possibly written) tensor arguments.
std::vector<at::Tensor> call_tensors(const KernelOp& op, const std::vector<c10::IValue>& args) {
  std::vector<at::Tensor> tensors = output_tensors(op.call(args));
  for (const auto& arg : args) {
    if (arg.isTensor()) tensors.push_back(arg.toTensor());
  }
  return tensors;
}

}  // namespace

TEST_CASE("The dependency scan accepts a CUDA variant when libtorch has CUDA") {
  const auto runtime = current_runtime();
  REQUIRE(runtime.libtorch_cuda);
  CHECK(check_variant_compatible(KH_FIXTURE_CUDA_VARIANT, runtime));
  const auto so = testing::only_shared_object(testing::fixture_cuda_variant_dir("relu", 1));
  const UniqueFd fd(::open(so.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd.get() >= 0);
  auto info = read_elf_dynamic(fd.get(), so.filename().string());
  REQUIRE(info);
  std::vector<std::string> probed;
  const auto order =
      plan_load_order({{so.filename().string(), *info}}, [&](const std::string& soname) {
        probed.push_back(soname);
        return false;
      });
  INFO((order ? std::string() : order.error().message));
  REQUIRE(order);
  // libtorch_cuda, libc10_cuda and libcudart.so.13 are the process's own: nothing is probed.
  CHECK(probed.empty());
}

TEST_CASE("A CUDA variant loads without Python and registers CUDA kernels") {
  const auto kernel = load_cuda_fixture("relu", 2);
  CHECK(kernel->variant == KH_FIXTURE_CUDA_VARIANT);
  CHECK_THAT(kernel->ops_namespace, Catch::StartsWith("_relu_cuda_"));
  CHECK(::dlopen("libpython3.11.so.1.0", RTLD_NOLOAD | RTLD_LAZY) == nullptr);
  for (const char* name : {"relu", "silu_and_mul", "scaled_relu"}) {
    INFO(name);
    const auto op = find_op(*kernel, name);
    CHECK(op.has_kernel_for(c10::DispatchKey::CUDA));
    CHECK_FALSE(op.has_kernel_for(c10::DispatchKey::CPU));
  }
  // No tensor argument: a catch-all kernel, callable anywhere.
  const auto version = find_op(*kernel, "fixture_version").call({});
  REQUIRE(version.size() == 1);
  CHECK(version[0].toInt() == 2);
}

TEST_CASE("The CUDA flash-attn2 variant has the published fwd and varlen_fwd schemas") {
  const auto cuda = load_cuda_fixture("flash-attn2", 3);
  const auto cpu =
      testing::load_local(testing::fixture_variant_dir("flash-attn2", 3), "local:flash-attn2");
  for (const char* name : {"fwd", "varlen_fwd"}) {
    INFO(name);
    const auto op = find_op(*cuda, name);
    CHECK(op.has_kernel_for(c10::DispatchKey::CUDA));
    CHECK(schema_text(op) == schema_text(find_op(*cpu, name)));
  }
}

TEST_CASE("Calling a CUDA op without a GPU fails with a clear error (with one it computes)") {
  const auto relu = find_op(*load_cuda_fixture("relu", 1), "relu");
  const at::Tensor cpu_in = at::randn({64});
  at::Tensor cpu_out = at::empty_like(cpu_in);
  // CPU tensors: the dispatcher names the backend the op lacks.
  try {
    relu.call({cpu_out, cpu_in});
    FAIL("a CPU call of a CUDA-only op returned");
  } catch (const c10::Error& error) {
    CHECK_THAT(error.what_without_backtrace(), Contains("'CPU' backend") && Contains("CUDA"));
  }
  if (at::hasCUDA()) {
    const at::Tensor in = cpu_in.cuda();
    at::Tensor out = at::empty_like(in);
    relu.call({out, in});
    CHECK(at::allclose(out.cpu(), at::clamp_min(cpu_in, 0)));
    return;
  }
  // No GPU: the CUDA kernel itself runs and fails in its device guard with torch's error.
  std::vector<float> in_host(16, -1.0f);
  std::vector<float> out_host(16, 7.0f);
  try {
    relu.call({claimed_cuda(out_host), claimed_cuda(in_host)});
    FAIL("a CUDA call without a GPU returned");
  } catch (const c10::Error& error) {
    // The kernel was reached (not the dispatcher's missing-backend error) and failed cleanly.
    CHECK_THAT(error.what_without_backtrace(), Contains("CUDA error: ") && !Contains("backend."));
  }
  CHECK(out_host == std::vector<float>(16, 7.0f));  // nothing was written
}

TEST_CASE(
    "Every attention fixture has a CUDA variant with the CPU build's ops under the CUDA key") {
  for (const auto& build : attention_builds()) {
    INFO(build.label);
    const auto cuda = load_build(build, true);
    const auto cpu = load_build(build, false);
    CHECK(cuda->variant == KH_FIXTURE_CUDA_VARIANT);
    CHECK_THAT(cuda->ops_namespace, Catch::StartsWith(build.ns_prefix));
    CHECK(cuda->ops_namespace != cpu->ops_namespace);
    // metadata.json as relu's and flash-attn2's CUDA builds: backend {cuda, archs}, and the
    // CPU build's version (a library's package version for the local builds).
    const auto metadata = read_metadata(build, true);
    CHECK(metadata.at("backend") ==
          nlohmann::json::parse(R"({"type": "cuda", "archs": ["8.0", "9.0"]})"));
    CHECK(metadata.at("id") == cuda->ops_namespace);
    CHECK(metadata.at("version") == read_metadata(build, false).at("version"));
    for (const auto& name : build.ops) {
      INFO(name);
      const auto op = find_op(*cuda, name);
      CHECK(op.has_kernel_for(c10::DispatchKey::CUDA));
      CHECK_FALSE(op.has_kernel_for(c10::DispatchKey::CPU));
      CHECK(schema_text(op) == schema_text(find_op(*cpu, name)));
    }
  }
}

TEST_CASE("An attention fixture's CUDA op without a GPU fails with a clear error") {
  for (const auto& build : attention_builds()) {
    INFO(build.label);
    const auto op = find_op(*load_build(build, true), build.sample_op);
    const MakeTensor on_cpu = [](at::IntArrayRef sizes, at::ScalarType dtype) {
      return at::zeros(sizes, at::TensorOptions().dtype(dtype));
    };
    // CPU tensors: the dispatcher names the backend the op lacks.
    try {
      op.call(build.sample_args(on_cpu));
      FAIL("a CPU call of a CUDA-only op returned");
    } catch (const c10::Error& error) {
      CHECK_THAT(error.what_without_backtrace(), Contains("'CPU' backend") && Contains("CUDA"));
    }
    if (build.reference_math) {
      // A CPU tensor beside a CUDA one reaches the CUDA kernel, whose check names it.
      ClaimedCuda claimed;
      auto args = build.sample_args(std::ref(claimed));
      args[1] = build.sample_args(on_cpu)[1];
      try {
        op.call(args);
        FAIL("a call with a CPU tensor in the CUDA build returned");
      } catch (const c10::Error& error) {
        const std::string message = error.what_without_backtrace();
        CHECK_THAT(message, Contains("the CUDA fixture only runs on CUDA tensors, but ") &&
                                Contains(" is on cpu"));
      }
    }
    if (at::hasCUDA()) {
      // With a GPU: the CUDA build computes what the CPU build computes.
      const auto cpu_op = find_op(*load_build(build, false), build.sample_op);
      at::manual_seed(0);
      const MakeTensor random = [](at::IntArrayRef sizes, at::ScalarType dtype) {
        return at::isFloatingType(dtype) ? at::randn(sizes).to(dtype)
                                         : at::zeros(sizes, at::TensorOptions().dtype(dtype));
      };
      const auto cpu_args = build.sample_args(random);
      std::vector<c10::IValue> cuda_args;
      cuda_args.reserve(cpu_args.size());
      for (const auto& arg : cpu_args) {
        cuda_args.push_back(arg.isTensor() ? c10::IValue(arg.toTensor().clone().cuda()) : arg);
      }
      const auto expected = call_tensors(cpu_op, cpu_args);
      const auto actual = call_tensors(op, cuda_args);
      REQUIRE(actual.size() == expected.size());
      for (std::size_t i = 0; i < actual.size(); ++i) {
        INFO("tensor " << i);
        REQUIRE(actual[i].defined() == expected[i].defined());
        if (!actual[i].defined()) continue;
        CHECK(actual[i].is_cuda());
        CHECK(at::allclose(actual[i].cpu().to(at::kFloat), expected[i].to(at::kFloat), 0, 1e-4));
      }
      continue;
    }
    // No GPU: the kernel runs and fails in its device guard with torch's CUDA error.
    ClaimedCuda claimed;
    try {
      op.call(build.sample_args(std::ref(claimed)));
      FAIL("a CUDA call without a GPU returned");
    } catch (const c10::Error& error) {
      CHECK_THAT(error.what_without_backtrace(), Contains("CUDA error: ") && !Contains("backend."));
    }
  }
}
