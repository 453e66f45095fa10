// load_kernel / open_local_kernel against real fixture builds. ctest runs every TEST_CASE in
// its own process, so "never appears in the dispatcher" and "first load" mean what they say.
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "kernelhub/loader/kernel_ops.hpp"
#include "kernelhub/loader/python_shim.hpp"
#include "kernelhub/loader/python_shim_symbols.hpp"
#include "loader/loader_test_support.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace kernelhub;
using namespace kernelhub::loader;
using kernelhub::testing::TempDir;

namespace {

// `count` threads load the kernel in `dir` at once; a failed load leaves its slot empty.
std::vector<std::shared_ptr<const LoadedKernel>> load_from_threads(const fs::path& dir, int count) {
  std::vector<std::shared_ptr<const LoadedKernel>> seen(static_cast<std::size_t>(count));
  std::vector<std::thread> threads;
  for (auto& slot : seen) {
    threads.emplace_back([&slot, &dir] {
      auto source = open_local_kernel(dir, "kernels-community/relu", current_runtime());
      if (!source) return;
      if (auto kernel = load_kernel(std::move(*source))) slot = *kernel;
    });
  }
  for (auto& t : threads) t.join();
  return seen;
}

int64_t fixture_version_of(const LoadedKernel& kernel) {
  auto op = KernelOp::find(kernel, "fixture_version");
  REQUIRE(op);
  const auto out = op->call({});
  REQUIRE(out.size() == 1);
  return out[0].toInt();
}

Error load_error(const fs::path& dir, const std::string& repo) {
  auto source = open_local_kernel(dir, repo, current_runtime());
  INFO((source ? std::string() : source.error().message));
  REQUIRE(source);
  auto kernel = load_kernel(std::move(*source));
  REQUIRE_FALSE(kernel);
  return kernel.error();
}

// Changes one byte in the middle of a file, in place.
void flip_byte(const fs::path& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f);
  const auto middle = static_cast<std::streamoff>(fs::file_size(file) / 2);
  f.seekg(middle);
  char byte = 0;
  f.get(byte);
  f.seekp(middle);
  f.put(static_cast<char>(byte ^ 0x5a));
}

}  // namespace

TEST_CASE("relu v1 loads from a local build and computes clamp_min") {
  const auto variant = testing::fixture_variant_dir("relu", 1);
  REQUIRE(testing::dispatcher_ops(testing::metadata_id(variant)).empty());
  // Python is not in this process, and PyModule_Create2 comes from the shim.
  CHECK(::dlsym(RTLD_DEFAULT, "PyModule_Create2") == nullptr);

  const auto kernel =
      testing::load_local(testing::fixture_kernel_dir("relu", 1), "kernels-community/relu");
  CHECK(kernel->ops_namespace == testing::metadata_id(variant));
  CHECK(kernel->variant == KH_FIXTURE_VARIANT);
  CHECK(kernel->repo == "kernels-community/relu");
  CHECK(kernel->loaded_here);
  CHECK(kernel->shared_objects ==
        std::vector<std::string>{testing::only_shared_object(variant).filename().string()});
  CHECK(::dlsym(RTLD_DEFAULT, "PyModule_Create2") != nullptr);

  auto relu = KernelOp::find(*kernel, "relu");
  REQUIRE(relu);
  CHECK(relu->qualified_name() == kernel->ops_namespace + "::relu");
  CHECK(relu->has_kernel_for(c10::DispatchKey::CPU));
  const auto input = at::randn({4, 33});
  auto out = at::empty_like(input);
  const auto returned = relu->call({out, input});
  CHECK(returned.empty());  // relu(Tensor! out, Tensor input) -> ()
  CHECK(at::equal(out, at::clamp_min(input, 0)));
  CHECK(fixture_version_of(*kernel) == 1);

  const auto all = loaded_kernels();
  REQUIRE(all.size() == 1);
  CHECK(all.front() == kernel);
}

TEST_CASE("relu v1 and v2 load side by side in one process") {
  const auto v1 =
      testing::load_local(testing::fixture_kernel_dir("relu", 1), "kernels-community/relu");
  const auto v2 =
      testing::load_local(testing::fixture_kernel_dir("relu", 2), "kernels-community/relu");
  CHECK(v1->ops_namespace != v2->ops_namespace);
  CHECK(v2->ops_namespace == testing::metadata_id(testing::fixture_variant_dir("relu", 2)));
  CHECK(fixture_version_of(*v1) == 1);
  CHECK(fixture_version_of(*v2) == 2);
  CHECK(KernelOp::find(*v1, "scaled_relu").error().code == ErrorCode::op_not_found);
  CHECK(KernelOp::find(*v2, "scaled_relu"));
  CHECK(loaded_kernels().size() == 2);
}

TEST_CASE("loading the same kernel again returns the same LoadedKernel without a second dlopen") {
  const auto dir = testing::fixture_kernel_dir("relu", 1);
  const auto first = testing::load_local(dir, "kernels-community/relu");
  const auto second = testing::load_local(dir, "kernels-community/relu");
  CHECK(first == second);
  // Concurrent loads of a kernel that is already there agree too.
  const auto seen = load_from_threads(dir, 4);
  for (const auto& kernel : seen) CHECK(kernel == first);
  CHECK(loaded_kernels().size() == 1);
}

TEST_CASE("concurrent first loads of one kernel dlopen it once") {
  const auto dir = testing::fixture_kernel_dir("relu", 2);
  const auto seen = load_from_threads(dir, 4);
  // A second TORCH_LIBRARY for the namespace would have aborted the process.
  REQUIRE(seen.front() != nullptr);
  for (const auto& kernel : seen) CHECK(kernel == seen.front());
  CHECK(fixture_version_of(*seen.front()) == 2);
}

TEST_CASE("S27 the kernel's fd stays open after loading") {
  auto source = open_local_kernel(testing::fixture_kernel_dir("relu", 1), "kernels-community/relu",
                                  current_runtime());
  REQUIRE(source);
  int so_fd = -1;
  for (const auto& file : source->files) {
    if (file.path.ends_with(".so")) so_fd = file.fd.get();
  }
  REQUIRE(so_fd >= 0);
  REQUIRE(load_kernel(std::move(*source)));
  CHECK(::fcntl(so_fd, F_GETFD) != -1);
  // Still the kernel's file: /proc/self/fd/N names it.
  const auto target = fs::read_symlink("/proc/self/fd/" + std::to_string(so_fd));
  CHECK(target == testing::only_shared_object(testing::fixture_variant_dir("relu", 1)));
}

TEST_CASE("a copy with one changed byte is refused before dlopen") {
  TempDir temp;
  const auto original = testing::fixture_variant_dir("relu", 1);
  const auto copy = temp.path() / KH_FIXTURE_VARIANT;
  testing::copy_variant(original, copy);
  const auto so = copy / testing::only_shared_object(original).filename();
  flip_byte(so);
  const auto actual = testing::run_command({"/usr/bin/sha256sum", so.string()});
  REQUIRE(actual.exit_code == 0);

  const auto error = load_error(copy, "kernels-community/relu");
  CHECK(error.code == ErrorCode::hash_mismatch);
  CHECK_THAT(error.message, Catch::Contains(so.filename().string()));
  CHECK_THAT(error.message, Catch::Contains(actual.out.substr(0, 64)));
  const auto ns = testing::metadata_id(original);
  CHECK(testing::dispatcher_ops(ns).empty());
  CHECK(loaded_kernels().empty());

  // The untouched build still loads in this process afterwards.
  const auto kernel = testing::load_local(original, "kernels-community/relu");
  CHECK(kernel->ops_namespace == ns);
  CHECK_FALSE(testing::dispatcher_ops(ns).empty());
}

TEST_CASE("a digest other than the file's is refused, also without metadata.json") {
  TempDir temp;
  const auto original = testing::fixture_variant_dir("relu", 1);
  const auto copy = temp.path() / KH_FIXTURE_VARIANT;
  testing::copy_variant(original, copy);
  fs::remove(copy / "metadata.json");
  auto source = open_local_kernel(copy, "local:relu", current_runtime());
  REQUIRE(source);
  // Without a digest the expected values are the bytes themselves...
  for (const auto& file : source->files) {
    const auto sum = testing::run_command({"/usr/bin/sha256sum", (copy / file.path).string()});
    CHECK(file.sha256 == sum.out.substr(0, 64));
  }
  // ...and a caller's differing expectation is a mismatch.
  auto& so = *std::find_if(source->files.begin(), source->files.end(),
                           [](const KernelFile& f) { return f.path.ends_with(".so"); });
  so.sha256 = std::string(64, '0');
  const auto result = load_kernel(std::move(*source));
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::hash_mismatch);
  CHECK_THAT(result.error().message, Catch::Contains(std::string(64, '0')));
  CHECK(testing::dispatcher_ops(testing::metadata_id(original)).empty());
}

TEST_CASE("a kernel file writable by others or by its group is refused") {
  const auto mode = GENERATE(0666, 0664, 0646);
  TempDir temp;
  const auto original = testing::fixture_variant_dir("relu", 1);
  const auto copy = temp.path() / KH_FIXTURE_VARIANT;
  testing::copy_variant(original, copy);
  const auto so = copy / testing::only_shared_object(original).filename();
  fs::permissions(so, static_cast<fs::perms>(mode));
  const auto error = load_error(copy, "kernels-community/relu");
  CHECK(error.code == ErrorCode::unsafe_kernel);
  CHECK_THAT(error.message, Catch::Contains("writable"));
  CHECK(testing::dispatcher_ops(testing::metadata_id(original)).empty());
}

TEST_CASE("broken-python-abi is refused naming _Py_NoneStruct and the process lives on") {
  const auto dir = testing::fixture_kernel_dir("broken-python-abi", 1);
  const auto error = load_error(dir, "kernels-community/broken-python-abi");
  CHECK(error.code == ErrorCode::unsafe_kernel);
  CHECK_THAT(error.message, Catch::Contains("_Py_NoneStruct"));
  CHECK_THAT(error.message, Catch::Contains("PyModule_Create2"));  // what is allowed
  const auto ns = testing::metadata_id(testing::fixture_variant_dir("broken-python-abi", 1));
  CHECK(testing::dispatcher_ops(ns).empty());

  const auto relu =
      testing::load_local(testing::fixture_kernel_dir("relu", 1), "kernels-community/relu");
  CHECK(fixture_version_of(*relu) == 1);
}

TEST_CASE("variants this process cannot load are refused with the reason") {
  Runtime runtime = current_runtime();
  REQUIRE_FALSE(runtime.libtorch_cuda);  // this binary links libtorch_cpu only
  const std::string tail = "-" + runtime.arch + "-linux";
  const std::string torch =
      "torch" + std::to_string(runtime.torch_major) + std::to_string(runtime.torch_minor);
  const std::string older =
      "torch" + std::to_string(runtime.torch_major) + std::to_string(runtime.torch_minor - 1);
  const std::string newer_abi = "torch-stable-abi" + std::to_string(runtime.torch_major) +
                                std::to_string(runtime.torch_minor + 1);
  const std::string other_arch = runtime.arch == "x86_64" ? "aarch64" : "x86_64";

  CHECK(check_variant_compatible(KH_FIXTURE_VARIANT, runtime));
  CHECK(check_variant_compatible(torch + "-cxx11-cpu" + tail, runtime));
  CHECK(check_variant_compatible(torch + "-cpu" + tail, runtime));  // no ABI tag
  CHECK(check_variant_compatible("torch-stable-abi" + std::to_string(runtime.torch_major) +
                                     std::to_string(runtime.torch_minor) + "-cpu" + tail,
                                 runtime));
  CHECK(check_variant_compatible("torch-stable-abi" + std::to_string(runtime.torch_major) +
                                     std::to_string(runtime.torch_minor - 1) + "-cpu" + tail,
                                 runtime));

  struct Case {
    std::string variant;
    std::string reason;
  };
  const std::vector<Case> refused = {
      {older + "-cxx11-cpu" + tail, "built for torch"},
      {torch + "-cxx11-cu132" + tail, "libtorch has no CUDA"},
      {newer_abi + "-cpu" + tail, "stable ABI"},
      {"tvm-ffi01-cpu" + tail, "needs Python"},
      {"torch-cpu", "needs Python"},
      {"torch-universal", "needs Python"},
      {torch + "-cxx98-cpu" + tail, "ABI"},
      {torch + "-cxx11-cpu-" + other_arch + "-linux", "built for " + other_arch},
      {torch + "-cxx11-rocm71" + tail, "rocm71"},
      {torch + "-metal-aarch64-darwin", "built for"},
      {"not-a-variant", "not a kernel-builder variant"},
  };
  for (const auto& c : refused) {
    INFO(c.variant);
    const auto result = check_variant_compatible(c.variant, runtime);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::incompatible_kernel);
    CHECK_THAT(result.error().message, Catch::Contains(c.reason));
    CHECK_THAT(result.error().message, Catch::Contains(c.variant));
  }

  // A libtorch with CUDA 13.2 takes cu130/cu132 and cpu, not cu126 or a newer minor, GPU
  // or not (runtime.cuda, a usable device, only steers selection).
  runtime.libtorch_cuda = "13.2";
  CHECK(check_variant_compatible(torch + "-cxx11-cu132" + tail, runtime));
  CHECK(check_variant_compatible(torch + "-cxx11-cu130" + tail, runtime));
  CHECK(check_variant_compatible(torch + "-cxx11-cpu" + tail, runtime));
  CHECK_FALSE(check_variant_compatible(torch + "-cxx11-cu126" + tail, runtime));
  CHECK_FALSE(check_variant_compatible(torch + "-cxx11-cu133" + tail, runtime));
}

TEST_CASE("load_kernel refuses a build whose folder names another torch") {
  const auto runtime = current_runtime();
  TempDir temp;
  const auto other = "torch" + std::to_string(runtime.torch_major) +
                     std::to_string(runtime.torch_minor - 1) + "-cxx11-cpu-" + runtime.arch +
                     "-linux";
  testing::copy_variant(testing::fixture_variant_dir("relu", 1), temp.path() / other);
  const auto error = load_error(temp.path() / other, "kernels-community/relu");
  CHECK(error.code == ErrorCode::incompatible_kernel);
  CHECK_THAT(error.message, Catch::Contains(other));
  CHECK(testing::dispatcher_ops(testing::metadata_id(testing::fixture_variant_dir("relu", 1)))
            .empty());

  // Under build/, open_local_kernel passes over it and says why none fits.
  fs::create_directories(temp.path() / "kernel" / "build");
  fs::rename(temp.path() / other, temp.path() / "kernel" / "build" / other);
  fs::create_directories(temp.path() / "kernel" / "build" / "torch-cpu");
  const auto source = open_local_kernel(temp.path() / "kernel", "local:relu", runtime);
  REQUIRE_FALSE(source);
  CHECK(source.error().code == ErrorCode::no_matching_variant);
  CHECK_THAT(source.error().message, Catch::Contains(other));
  CHECK_THAT(source.error().message, Catch::Contains("needs Python"));
}

TEST_CASE("S28 a sibling dependency is loaded first, found by its SONAME") {
  CHECK(::dlopen("libkh_s28_dep.so", RTLD_NOLOAD | RTLD_LAZY) == nullptr);
  const auto kernel = testing::load_local(KH_S28_VARIANT_DIR, "local:s28");
  CHECK(kernel->shared_objects == std::vector<std::string>{"z_dep.so", "a_top.so"});
  CHECK(kernel->ops_namespace == "a_top");  // no metadata.json: the stem of the top object
  CHECK(::dlopen("libkh_s28_dep.so", RTLD_NOLOAD | RTLD_LAZY) != nullptr);
}

TEST_CASE("a variant needing a library that exists nowhere is refused naming it") {
  const auto error = load_error(KH_MISSING_VARIANT_DIR, "local:missing");
  CHECK(error.code == ErrorCode::missing_dependency);
  CHECK_THAT(error.message, Catch::Contains("libkh_does_not_exist.so"));
  CHECK_THAT(error.message, Catch::Contains("missing_needer.so"));
  CHECK(loaded_kernels().empty());
}

TEST_CASE("a namespace already registered by someone else is not loaded again") {
  // Stand-in for Python's import: the shim, then a plain dlopen of the .so.
  REQUIRE(ensure_python_shim());
  const auto so = testing::only_shared_object(testing::fixture_variant_dir("relu", 2));
  REQUIRE(::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr);
  const auto ns = testing::metadata_id(testing::fixture_variant_dir("relu", 2));
  REQUIRE_FALSE(testing::dispatcher_ops(ns).empty());

  const auto kernel =
      testing::load_local(testing::fixture_kernel_dir("relu", 2), "kernels-community/relu");
  CHECK_FALSE(kernel->loaded_here);
  CHECK(kernel->ops_namespace == ns);
  CHECK(fixture_version_of(*kernel) == 2);
}

TEST_CASE("the Python shim defines every function the scan lets through") {
  const auto candidates = python_shim_candidates(util::Environment{});
  REQUIRE_FALSE(candidates.empty());
  // The test binary is in <build>/bin, the shim in <build>/lib.
  const auto shim = fs::path(KH_BUILD_DIR) / "lib" / kPythonShimFile;
  CHECK(std::find(candidates.begin(), candidates.end(), shim) != candidates.end());
  void* handle = ::dlopen(shim.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  for (const auto name : kPythonShimFunctions) {
    INFO(name);
    CHECK(::dlsym(handle, std::string(name).c_str()) != nullptr);
  }
  const auto nm = testing::run_command({"/usr/bin/nm", "-D", "--defined-only", shim.string()});
  REQUIRE(nm.exit_code == 0);
  for (const auto name : kPythonShimFunctions)
    CHECK_THAT(nm.out, Catch::Contains(std::string(name)));

  util::Environment env;
  env.set("KERNELHUB_PYSHIM", "/opt/elsewhere/libkernelhub_pyshim.so");
  CHECK(python_shim_candidates(env) ==
        std::vector<fs::path>{"/opt/elsewhere/libkernelhub_pyshim.so"});
}

TEST_CASE("open_local_kernel takes digests from metadata.json and picks the variant under build/") {
  const auto source =
      open_local_kernel(testing::fixture_kernel_dir("relu", 1), "local:relu", current_runtime());
  REQUIRE(source);
  CHECK(source->variant == KH_FIXTURE_VARIANT);
  std::vector<std::string> expected_paths;
  for (const auto& entry : fs::directory_iterator(testing::fixture_variant_dir("relu", 1))) {
    expected_paths.push_back(entry.path().filename().string());
  }
  std::sort(expected_paths.begin(), expected_paths.end());
  std::vector<std::string> paths;
  for (const auto& file : source->files) {
    paths.push_back(file.path);
    const auto sum = testing::run_command(
        {"/usr/bin/sha256sum", (testing::fixture_variant_dir("relu", 1) / file.path).string()});
    CHECK(file.sha256 == sum.out.substr(0, 64));
  }
  CHECK(paths == expected_paths);

  const auto metadata = read_metadata(*source);
  REQUIRE(metadata);
  CHECK(metadata->id == testing::metadata_id(testing::fixture_variant_dir("relu", 1)));
  CHECK(metadata->name == "relu");
  CHECK(metadata->version == "1");
}

TEST_CASE("read_metadata is lenient about fields and reads from offset 0") {
  const std::string json =
      R"({"id": "_lib_cpu_abc1234", "name": 7, "version": "2.7.4", "unknown": {"x": 1}})";
  const int fd = ::memfd_create("metadata", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, json.data(), json.size()) ==
          static_cast<ssize_t>(json.size()));  // offset at end
  KernelSource source;
  source.repo = "local:lib";
  source.files.push_back(KernelFile{"metadata.json", "", UniqueFd(fd)});
  const auto metadata = read_metadata(source);
  REQUIRE(metadata);
  CHECK(metadata->id == "_lib_cpu_abc1234");
  CHECK_FALSE(metadata->name);  // wrongly typed: ignored
  CHECK(metadata->version == "2.7.4");
  CHECK(::lseek(fd, 0, SEEK_CUR) == static_cast<off_t>(json.size()));

  KernelSource none;
  const auto empty = read_metadata(none);
  REQUIRE(empty);
  CHECK_FALSE(empty->id);
}

TEST_CASE("a symlink inside a local kernel folder is refused") {
  TempDir temp;
  const auto copy = temp.path() / KH_FIXTURE_VARIANT;
  testing::copy_variant(testing::fixture_variant_dir("relu", 1), copy);
  fs::create_symlink("/etc/passwd", copy / "extra.json");
  const auto source = open_local_kernel(copy, "local:relu", current_runtime());
  REQUIRE_FALSE(source);
  CHECK(source.error().code == ErrorCode::unsafe_path);
  CHECK_THAT(source.error().message, Catch::Contains("extra.json"));
}
