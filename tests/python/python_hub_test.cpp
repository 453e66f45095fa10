// Python-only kernels from the fixture Hub, fetched as every hub kernel is (in-process, or
// through kernelhubd), verified, and imported: py-ops, a Triton kernel on CPU tensors
// (TRITON_INTERPRET=1), flash-attn4's interface against SDPA, and the trust rule. Every
// TEST_CASE runs in its own process under ctest: one interpreter per process.
#include <fstream>

#include <ATen/ATen.h>

#include "attention/hub_environment.hpp"
#include "kernelhub/python_kernel.hpp"
#include "noarch_variant.hpp"
#include "support/raw_http.hpp"

// Last: c10 defines its own CHECK macro, which must not replace Catch's.
#include <catch2/catch.hpp>

namespace kpy = kernelhub::python;
using kernelhub::testing::HubEnvironment;
using kernelhub::testing::HubEnvironmentOptions;
using kernelhub::testing::max_abs_diff;
using kernelhub::testing::sdpa_reference;
using kernelhub::testing::set_dispatcher_env;
using kernelhub::testing::TempDir;

namespace {

void runs_the_fixture_kernels(bool with_daemon) {
  const HubEnvironment hub(
      HubEnvironmentOptions{.with_daemon = with_daemon, .env = {{"TRITON_INTERPRET", "1"}}});

  const auto ops = kpy::get_kernel("kernels-community/py-ops", {.version = 1});
  CHECK(ops.variant() == "torch-cpu");  // the backend's build before torch-universal
  CHECK(ops.module_name().starts_with("_py_ops_cpu_"));
  CHECK(ops.call("module_name").toStringRef() == ops.module_name());
  auto x = at::ones({3});
  CHECK(ops.call("add_", {x, at::ones({3})}).toTensor().data_ptr() == x.data_ptr());
  CHECK(x.equal(at::full({3}, 2.0)));
  CHECK_THAT(ops.call("source_of_twice").toStringRef(), Catch::Contains("def twice"));

  // @triton.jit read its source from the import hook; the kernel runs on CPU tensors.
  const auto triton = kpy::get_kernel("kernels-community/triton-axpy", {.version = 1});
  const auto a = at::randn({1000});
  const auto b = at::randn({1000});
  const auto out = triton.call("axpy", {2.5, a, b}).toTensor();
  CHECK(max_abs_diff(out, 2.5 * a + b) < 1e-5);

  const auto fa4 = kpy::get_kernel("kernels-community/flash-attn4", {.version = 0});
  const auto q = at::randn({2, 16, 4, 32});
  const auto k = at::randn({2, 16, 2, 32});  // GQA
  const auto v = at::randn({2, 16, 2, 32});
  const auto result =
      fa4.call("flash_attn_func", {},
               {{"q", q}, {"k", k}, {"v", v}, {"causal", true}, {"return_lse", true}});
  const auto& parts = result.toTupleRef().elements();
  CHECK(max_abs_diff(parts.at(0).toTensor(), sdpa_reference(q, k, v, true)) < 1e-4);
  CHECK(parts.at(1).toTensor().sizes() == at::IntArrayRef({2, 4, 16}));
}

}  // namespace

TEST_CASE("Python-only hub kernels run from C++, fetched in-process", "[python][hub]") {
  runs_the_fixture_kernels(false);
}

TEST_CASE("Python-only hub kernels run from C++, fetched through kernelhubd", "[python][hub]") {
  runs_the_fixture_kernels(true);
}

TEST_CASE("Python kernels follow the trust rule", "[python][hub]") {
  const HubEnvironment hub;
  CHECK_THROWS_AS(kpy::get_kernel("SageAttention/sage-blackwell", {.version = 1}),
                  kpy::KernelRefused);
  kernelhub::testing::set_dispatcher_env({{"DIFFUSERS_TRUST_REMOTE_KERNELS", "true"}});
  const auto sage = kpy::get_kernel("SageAttention/sage-blackwell", {.version = 1});
  CHECK(sage.has("sageattn3_blackwell"));
  kernelhub::testing::set_dispatcher_env({{"DIFFUSERS_DISABLE_REMOTE_CODE", "true"}});
  CHECK_THROWS_AS(kpy::get_kernel("kernels-community/py-ops", {.version = 1}), kpy::KernelRefused);
}

namespace {

void hostile_kernels_are_typed_errors(bool with_daemon) {
  const HubEnvironment hub(HubEnvironmentOptions{.with_daemon = with_daemon});
  CHECK_THROWS_AS(kpy::get_kernel("kernels-community/py-syntax-error"), kpy::PythonError);
  CHECK_THROWS_WITH(kpy::get_kernel("kernels-community/py-missing-depends"),
                    Catch::Contains("pip install einops"));
  CHECK_THROWS_WITH(kpy::get_kernel("kernels-community/py-unknown-depends"),
                    Catch::Contains("unsupported kernel dependency"));
  try {
    kpy::get_kernel("kernels-community/py-import-raises");
    FAIL("imported");
  } catch (const kpy::PythonError& error) {
    CHECK(error.type() == "RuntimeError");
  }
  CHECK_THROWS_AS(kpy::get_kernel("kernels-community/py-outside-import"), kpy::PythonError);
  // Compiled kernels are not imported here: a clear refusal, not a wrong import.
  CHECK_THROWS_WITH(kpy::get_kernel("kernels-community/relu"), Catch::Contains("is compiled"));
  // flash-attn4 first, then py-clobber, which replaces its modules in sys.modules: refused,
  // and flash-attn4 still works.
  const auto fa4 = kpy::get_kernel("kernels-community/flash-attn4", {.version = 0});
  CHECK_THROWS_WITH(kpy::get_kernel("kernels-community/py-clobber"),
                    Catch::Contains("replaced modules it does not own"));
  const auto q = at::randn({1, 8, 2, 16});
  CHECK(fa4.call("flash_attn_func", {q, q, q}).toTupleRef().elements().at(0).isTensor());
  const auto ops = kpy::get_kernel("kernels-community/py-ops");
  CHECK(ops.call("version_mark").toStringRef() == "py-ops original");
}

}  // namespace

TEST_CASE("hostile hub kernels are typed errors, fetched in-process", "[python][hub]") {
  hostile_kernels_are_typed_errors(false);
}

TEST_CASE("hostile hub kernels are typed errors, through kernelhubd", "[python][hub]") {
  hostile_kernels_are_typed_errors(true);
}

TEST_CASE("a lockfile in force pins Python kernels too", "[python][hub]") {
  const HubEnvironment hub;
  TempDir dir;
  std::ofstream(dir.path() / "kernelhub.toml")
      << "[tool.kernels.dependencies]\n\"kernels-community/py-ops\" = 1\n";
  const auto lock = dir.path() / "kernels.lock";
  const auto locked = kernelhub::testing::run_command(
      {std::string(KH_BIN_DIR) + "/kernelhub", "lock", dir.path().string(), "-o", lock.string()},
      {{"HF_ENDPOINT", hub.endpoint()}});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  set_dispatcher_env({{"KERNELHUB_LOCKFILE", lock.string()}});
  CHECK(kpy::get_kernel("kernels-community/py-ops").call("version_mark").toStringRef() ==
        "py-ops original");
  // Not in the lock: refused, with what to run.
  CHECK_THROWS_AS(kpy::get_kernel("kernels-community/triton-axpy"), kpy::KernelRefused);
  CHECK_THROWS_WITH(kpy::get_kernel("kernels-community/triton-axpy"),
                    Catch::Contains("is not in the lockfile"));
}

TEST_CASE("kernel-depends are loaded first and reach the kernel through kernels.get_kernel_dep",
          "[python][hub]") {
  const HubEnvironment hub;
  TempDir dir;
  kernelhub::testing::NoarchKernel kernel;
  kernel.name = "py-uses-ops";
  kernel.kernel_depends = {{"kernels-community/py-ops", 1}, {"kernels-community/relu", 1}};
  kernel.files["__init__.py"] =
      "from kernels import get_kernel_dep\n"
      "_ops = get_kernel_dep('kernels-community/py-ops')\n"
      "_relu = get_kernel_dep('kernels-community/relu')\n"
      "def twice_via_dependency(x):\n"
      "    return _ops.twice(x)\n"
      "def relu_via_dependency(x):\n"
      "    out = x.new_empty(x.shape)\n"
      "    _relu.ops.relu(out, x)\n"
      "    return out\n"
      "def dependency_name():\n"
      "    return _ops.__name__\n";
  kernelhub::testing::write_noarch_kernel(dir.path(), kernel);
  const auto uses = kpy::get_local_kernel(dir.path());
  CHECK(uses.call("twice_via_dependency", {int64_t{4}}).toInt() == 8);
  CHECK(uses.call("dependency_name").toStringRef().starts_with("_py_ops_cpu_"));
  // A compiled dependency is loaded natively; the kernel sees its ops.
  const auto x = at::randn({16});
  CHECK(uses.call("relu_via_dependency", {x}).toTensor().equal(x.relu()));
}

TEST_CASE("a Python build listing a 1 GB source is refused before any download, both ways",
          "[python][hub]") {
  for (const bool with_daemon : {false, true}) {
    const HubEnvironment hub(HubEnvironmentOptions{.with_daemon = with_daemon});
    // The upstream lies: py-ops' __init__.py is listed at 1 GiB.
    const int port = std::stoi(hub.endpoint().substr(hub.endpoint().rfind(':') + 1));
    const std::string body = R"({"declared_sizes": {"__init__.py": 1073741824}})";
    kernelhub::testing::RawHttp http(port);
    REQUIRE(
        http.send("POST /_kernelhub/faults HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  "Content-Type: application/json\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body));
    REQUIRE(http.read_reply(std::chrono::seconds(5)).status == 200);
    INFO("through kernelhubd: " << with_daemon);
    CHECK_THROWS_AS(kpy::get_kernel("kernels-community/py-ops"), kpy::BackendUnavailable);
    CHECK_THROWS_WITH(kpy::get_kernel("kernels-community/py-ops"),
                      Catch::Contains("__init__.py is listed at 1073741824 bytes"));
    // Nothing of it was downloaded: no blob of that size, and the process goes on.
    std::uintmax_t largest = 0;
    if (std::filesystem::exists(hub.cache())) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(hub.cache())) {
        if (entry.is_regular_file()) largest = std::max(largest, entry.file_size());
      }
    }
    CHECK(largest < (std::uintmax_t{1} << 20));
  }
}
