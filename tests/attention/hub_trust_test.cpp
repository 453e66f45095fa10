// Trust and verification through the dispatcher: untrusted publishers need
// DIFFUSERS_TRUST_REMOTE_KERNELS, DIFFUSERS_DISABLE_REMOTE_CODE refuses every remote kernel,
// a tampered cached .so is refused before dlopen, and a kernel the loader cannot provide
// for (a Python data symbol) is refused while the process lives on.
#include <sys/stat.h>

#include <fstream>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/randn.h>

#include "attention/hub_environment.hpp"
#include "kernelhub/attention.hpp"
#include "kernelhub/attention/kernel_provider.hpp"

// Last: c10 defines its own CHECK macro, which must not replace Catch's.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
using kernelhub::testing::HubEnvironment;
using kernelhub::testing::max_abs_diff;
using kernelhub::testing::sdpa_reference;

namespace {

// Any op registered under a namespace that starts with `prefix` (e.g. "_flash_attn2_cpu_").
bool namespace_registered(const std::string& prefix) {
  for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

void run_native_still_works() {
  const at::Tensor q = at::randn({1, 8, 2, 64});
  ka::AttentionOptions options;
  options.backend = "native";
  CHECK(max_abs_diff(ka::dispatch_attention(q, q, q, options), sdpa_reference(q, q, q)) <= 1e-5);
}

}  // namespace

TEST_CASE("sage_hub is refused without DIFFUSERS_TRUST_REMOTE_KERNELS", "[hub][trust]") {
  HubEnvironment hub;
  try {
    ka::BackendGuard guard("sage_hub");
    FAIL("sage_hub was activated for an untrusted publisher");
  } catch (const ka::KernelRefused& e) {
    CHECK_THAT(e.what(), Catch::Contains("SageAttention/sage-attention"));
    CHECK_THAT(e.what(), Catch::Contains("DIFFUSERS_TRUST_REMOTE_KERNELS=true"));
  }
  CHECK(ka::active_backend() == "native");
  CHECK_FALSE(std::filesystem::exists(hub.cache() / "kernels--SageAttention--sage-attention"));
  CHECK_FALSE(namespace_registered("_sage_attention_cpu_"));
}

TEST_CASE("DIFFUSERS_DISABLE_REMOTE_CODE refuses every remote kernel and trusted ones too",
          "[hub][trust]") {
  HubEnvironment hub({.env = {{"DIFFUSERS_DISABLE_REMOTE_CODE", "true"},
                              {"DIFFUSERS_TRUST_REMOTE_KERNELS", "true"}}});
  for (const char* backend :
       {"flash_hub", "flash_varlen_hub", "_flash_3_hub", "_flash_3_varlen_hub", "sage_hub"}) {
    INFO(backend);
    CHECK_THROWS_AS(ka::BackendGuard(backend), ka::KernelRefused);
    CHECK_THROWS_WITH(ka::BackendGuard(backend), Catch::Contains("DIFFUSERS_DISABLE_REMOTE_CODE"));
  }
  CHECK((!std::filesystem::exists(hub.cache()) || std::filesystem::is_empty(hub.cache())));
  run_native_still_works();
}

TEST_CASE("a cached .so with one byte changed is refused before dlopen", "[hub][integrity]") {
  HubEnvironment hub;
  // Fill the cache with the CLI, then flip one byte of the .so blob in place.
  const auto download = kernelhub::testing::run_command(
      {std::string(KH_BIN_DIR) + "/kernelhub", "download", "kernels-community/flash-attn2",
       "--version", "3", "--cache-dir", hub.cache().string()});
  REQUIRE(download.exit_code == 0);
  std::filesystem::path so;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           hub.cache() / "kernels--kernels-community--flash-attn2" / "snapshots")) {
    if (entry.path().extension() == ".so") so = std::filesystem::canonical(entry.path());
  }
  REQUIRE_FALSE(so.empty());
  std::filesystem::permissions(so, std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  {
    std::fstream file(so, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(4096);
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    file.seekp(4096);
    file.write(&byte, 1);
  }
  std::filesystem::permissions(so, std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::remove);
  kernelhub::testing::set_dispatcher_env({{"HF_HUB_OFFLINE", "1"}});  // use the cache as it is

  try {
    ka::BackendGuard guard("flash_hub");
    FAIL("a tampered kernel was activated");
  } catch (const ka::KernelRefused& e) {
    CHECK_THAT(e.what(), Catch::Contains("sha256") || Catch::Contains("hash"));
  }
  CHECK_FALSE(namespace_registered("_flash_attn2_cpu_"));
  run_native_still_works();
}

TEST_CASE("a kernel referencing Python data symbols is refused and the process lives on",
          "[hub][loader]") {
  HubEnvironment hub;
  namespace detail = ka::detail;
  try {
    detail::provide_hub_kernel({"test", "kernels-community/broken-python-abi", 1});
    FAIL("the broken kernel was loaded");
  } catch (const ka::KernelRefused& e) {
    CHECK_THAT(e.what(), Catch::Contains("_Py_NoneStruct"));
  }
  // Still alive, and other kernels still load and compute.
  ka::BackendGuard guard("flash_hub");
  const at::Tensor q = at::randn({1, 16, 2, 64});
  CHECK(max_abs_diff(ka::dispatch_attention(q, q, q), sdpa_reference(q, q, q)) <= 1e-5);
}
