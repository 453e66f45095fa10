// The CUDA fixture variants in a process whose libtorch has CUDA (this binary links
// libtorch_cuda and libc10_cuda) and that needs no GPU: the dependency scan accepts them, they
// load without Python, their ops are in the c10 dispatcher with CUDA kernels and the published
// schemas, and a call fails with torch's CUDA error when there is no GPU (or, on a GPU host,
// computes what ATen computes).
#include <ATen/Context.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/randn.h>
#include <dlfcn.h>
#include <fcntl.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <vector>

#include "loader/kernel_loader.hpp"
#include "loader/kernel_ops.hpp"
#include "loader/load_order.hpp"
#include "tests/loader/loader_test_support.hpp"
#include "trust/unique_fd.hpp"

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
