// A CUDA fixture variant in a process whose libtorch has no CUDA (this binary links only
// libtorch_cpu): the variant check and the dependency scan each refuse it, saying why,
// before anything of it is mapped.
#include <dlfcn.h>
#include <fcntl.h>

#include <catch2/catch.hpp>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/loader/load_order.hpp"
#include "kernelhub/util/unique_fd.hpp"
#include "loader/loader_test_support.hpp"

using namespace kernelhub;
using namespace kernelhub::loader;
using Catch::Matchers::Contains;

namespace {

void require_no_libtorch_cuda() {
  INFO("this test binary must not load libtorch_cuda (it links kh::torch_cpu only)");
  REQUIRE(::dlopen("libtorch_cuda.so", RTLD_NOLOAD | RTLD_LAZY) == nullptr);
  REQUIRE_FALSE(current_runtime().libtorch_cuda);
}

}  // namespace

TEST_CASE("A CUDA variant is refused by a process whose libtorch has no CUDA") {
  require_no_libtorch_cuda();
  const auto dir = testing::fixture_cuda_variant_dir("relu", 1);
  auto source = open_local_kernel(dir, "local:relu-cuda", current_runtime());
  REQUIRE(source);
  const auto loaded = load_kernel(std::move(*source));
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().code == ErrorCode::incompatible_kernel);
  CHECK_THAT(loaded.error().message, Contains(KH_FIXTURE_CUDA_VARIANT) &&
                                         Contains("libtorch has no CUDA") &&
                                         Contains("libtorch_cuda.so is not loaded"));
  CHECK(testing::dispatcher_ops(testing::metadata_id(dir)).empty());
}

TEST_CASE("The dependency scan refuses torch's CUDA libraries it would have to load itself") {
  require_no_libtorch_cuda();
  const auto so = testing::only_shared_object(testing::fixture_cuda_variant_dir("relu", 1));
  const UniqueFd fd(::open(so.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd.get() >= 0);
  auto info = read_elf_dynamic(fd.get(), so.filename().string());
  REQUIRE(info);
  // What a Hub CUDA build needs besides libtorch_cpu/libc10.
  for (const char* lib : {"libtorch_cuda.so", "libc10_cuda.so", "libcudart.so.13"}) {
    INFO(lib);
    CHECK(std::find(info->needed.begin(), info->needed.end(), lib) != info->needed.end());
  }
  // A probe that would find everything: torch's CUDA half is still refused, and only it.
  std::vector<std::string> probed;
  const auto order =
      plan_load_order({{so.filename().string(), *info}}, [&](const std::string& soname) {
        probed.push_back(soname);
        return true;
      });
  REQUIRE_FALSE(order);
  CHECK(order.error().code == ErrorCode::incompatible_kernel);
  CHECK_THAT(order.error().message,
             Contains("CUDA build") && Contains("libtorch_cuda.so (needed by _relu_cuda_") &&
                 Contains("libc10_cuda.so (needed by") && !Contains("libcudart"));
  CHECK(std::find(probed.begin(), probed.end(), "libtorch_cuda.so") == probed.end());
  CHECK(std::find(probed.begin(), probed.end(), "libc10_cuda.so") == probed.end());
}
