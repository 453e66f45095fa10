// Hostile and broken Python kernels: each is a typed error, and the process (and every
// kernel imported before) carries on unharmed.
#include <chrono>
#include <filesystem>
#include <fstream>

#include "kernelhub/python_kernel.hpp"
#include "noarch_variant.hpp"
#include "support/process.hpp"

// Last: c10 defines its own CHECK macro, which must not replace Catch's.
#include <catch2/catch.hpp>

namespace kpy = kernelhub::python;
using kernelhub::testing::NoarchKernel;
using kernelhub::testing::ops_kernel;
using kernelhub::testing::TempDir;
using kernelhub::testing::write_noarch_kernel;

namespace {

NoarchKernel named(std::string name, std::map<std::string, std::string> files) {
  NoarchKernel kernel;
  kernel.name = std::move(name);
  kernel.files = std::move(files);
  return kernel;
}

// The ops kernel, to look at sys.modules from inside the interpreter.
kpy::Kernel observer(const TempDir& dir) {
  write_noarch_kernel(dir.path() / "observer", ops_kernel());
  return kpy::get_local_kernel(dir.path() / "observer");
}

std::size_t modules_named(const kpy::Kernel& observer, const std::string& prefix) {
  return observer.call("loaded_with_prefix", {prefix}).toListRef().size();
}

}  // namespace

TEST_CASE("a syntax error in a kernel is a PythonError that points at it", "[python]") {
  TempDir dir;
  write_noarch_kernel(dir.path(), named("py-syntax", {{"__init__.py", "from . import broken\n"},
                                                      {"broken.py", "x = 1\ndef f(:\n"}}));
  try {
    kpy::get_local_kernel(dir.path());
    FAIL("imported");
  } catch (const kpy::PythonError& error) {
    CHECK(error.type() == "SyntaxError");
    CHECK_THAT(error.file(), Catch::EndsWith("/broken.py"));
    CHECK(error.line() == 2);
  }
}

TEST_CASE("a kernel whose import raises leaves nothing of itself in sys.modules", "[python]") {
  TempDir dir;
  const auto observe = observer(dir);
  write_noarch_kernel(
      dir.path() / "raises",
      named("py-raises", {{"__init__.py",
                           "from . import part\n"
                           "raise RuntimeError('kernel import failed on purpose')\n"},
                          {"part.py", "X = 1\n"}}));
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second import runs again, from scratch
    try {
      kpy::get_local_kernel(dir.path() / "raises");
      FAIL("imported");
    } catch (const kpy::PythonError& error) {
      CHECK(error.type() == "RuntimeError");
      CHECK(error.python_message() == "kernel import failed on purpose");
      CHECK(error.line() == 2);
    }
    CHECK(modules_named(observe, "_py_raises_") == 0);
  }
  CHECK(observe.call("mark").toStringRef() == "original");
}

TEST_CASE("python-depends: a missing package names its pip install, an unknown one refuses",
          "[python]") {
  TempDir dir;
  auto missing = named("py-needs-einops", {{"__init__.py", "import einops\n"}});
  missing.python_depends = {"einops"};  // not installed in the test venv
  write_noarch_kernel(dir.path() / "missing", missing);
  CHECK_THROWS_WITH(kpy::get_local_kernel(dir.path() / "missing"),
                    Catch::Contains("requires Python dependency `einops`") &&
                        Catch::Contains("pip install einops"));
  auto unknown = named("py-unknown-dep", {{"__init__.py", "X = 1\n"}});
  unknown.python_depends = {"not-a-known-dependency"};
  write_noarch_kernel(dir.path() / "unknown", unknown);
  CHECK_THROWS_AS(kpy::get_local_kernel(dir.path() / "unknown"), kpy::BackendUnavailable);
  CHECK_THROWS_WITH(kpy::get_local_kernel(dir.path() / "unknown"),
                    Catch::Contains("uses unsupported kernel dependency: not-a-known-dependency"));
  // A dependency of another backend is unknown here (cutlass is CUDA-only in the allow-list).
  auto cuda_only = named("py-cutlass", {{"__init__.py", "X = 1\n"}});
  cuda_only.python_depends = {"nvidia-cutlass-dsl"};
  cuda_only.backend = "cpu";
  write_noarch_kernel(dir.path() / "cuda-only", cuda_only);
  CHECK_THROWS_WITH(kpy::get_local_kernel(dir.path() / "cuda-only"),
                    Catch::Contains("unsupported kernel dependency: nvidia-cutlass-dsl"));
}

TEST_CASE("a module outside the variant's files cannot be imported from it, even if it exists",
          "[python]") {
  TempDir dir;
  const auto variant = write_noarch_kernel(
      dir.path(), named("py-outside", {{"__init__.py", "from .not_listed import X\n"}}));
  // On disk, next to the variant's files, but not one of them.
  std::ofstream(variant / "not_listed.py") << "X = 1\n";
  std::ofstream(dir.path() / "not_listed.py") << "X = 1\n";
  // The local folder's listing must match metadata.json: the extra file is refused there...
  CHECK_THROWS_AS(kpy::get_local_kernel(dir.path()), kpy::KernelRefused);
  std::filesystem::remove(variant / "not_listed.py");
  // ...and without it, the import finds only the verified files.
  try {
    kpy::get_local_kernel(dir.path());
    FAIL("imported");
  } catch (const kpy::PythonError& error) {
    CHECK(error.type() == "ModuleNotFoundError");
    CHECK_THAT(error.python_message(), Catch::Contains("not_listed.py is not a file of"));
  }
}

TEST_CASE("a 1 GB source file is refused before it is read", "[python]") {
  TempDir dir;
  const auto variant = write_noarch_kernel(
      dir.path(),
      named("py-huge", {{"__init__.py", "from . import huge\n"}, {"huge.py", "X = 1\n"}}));
  std::filesystem::resize_file(variant / "huge.py", std::uintmax_t{1} << 30);  // sparse
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(kpy::get_local_kernel(dir.path()),
                    Catch::Contains("huge.py is 1073741824 bytes"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE(
    "a kernel that replaces another kernel's sys.modules entries is refused, and theirs "
    "are put back",
    "[python]") {
  TempDir dir;
  const auto observe = observer(dir);
  const std::string& victim = observe.module_name();
  write_noarch_kernel(
      dir.path() / "clobber",
      named("py-clobber", {{"__init__.py",
                            "import sys, types\n"
                            "for name in [n for n in sys.modules if n.startswith('" +
                                victim +
                                "')]:\n"
                                "    sys.modules[name] = types.ModuleType(name)\n"
                                "def ok():\n    return True\n"}}));
  const auto before = modules_named(observe, victim);
  try {
    kpy::get_local_kernel(dir.path() / "clobber");
    FAIL("imported");
  } catch (const kpy::PythonError& error) {
    CHECK(error.type() == "ImportError");
    CHECK_THAT(error.python_message(), Catch::Contains("replaced modules it does not own"));
  }
  CHECK(modules_named(observe, victim) == before);
  CHECK(modules_named(observe, "_py_clobber_") == 0);
  CHECK(observe.call("lazy_mark").toStringRef() == "lazy original");  // imports through its finder
}

TEST_CASE("a metadata id that is not a kernel id cannot take another module's name", "[python]") {
  TempDir dir;
  auto kernel = named("py-json", {{"__init__.py", "X = 1\n"}});
  kernel.id = "json";
  write_noarch_kernel(dir.path(), kernel);
  CHECK_THROWS_AS(kpy::get_local_kernel(dir.path()), kpy::KernelRefused);
}
