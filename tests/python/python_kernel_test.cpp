// The Python runtime from C++ on local noarch variants: calls, zero-copy tensors, imports
// from verified bytes, typed errors. Each TEST_CASE runs in its own process under ctest (one
// interpreter per process).
#include <fstream>
#include <thread>

#include <ATen/ATen.h>

#include "kernelhub/python_kernel.hpp"
#include "noarch_variant.hpp"
#include "support/process.hpp"

// Last: c10 defines its own CHECK macro, which must not replace Catch's.
#include <catch2/catch.hpp>

namespace kpy = kernelhub::python;
using kernelhub::testing::ops_kernel;
using kernelhub::testing::TempDir;
using kernelhub::testing::write_noarch_kernel;

TEST_CASE("a Python kernel's functions run on the caller's tensors, without copies", "[python]") {
  TempDir dir;
  write_noarch_kernel(dir.path(), ops_kernel());
  const kpy::Kernel kernel = kpy::get_local_kernel(dir.path());

  auto x = at::ones({4});
  const auto y = at::full({4}, 2.0);
  const auto out = kernel.call("add_", {x, y});
  REQUIRE(out.isTensor());
  CHECK(out.toTensor().data_ptr() == x.data_ptr());
  CHECK(out.toTensor().unsafeGetTensorImpl() == x.unsafeGetTensorImpl());
  CHECK(x.equal(at::full({4}, 3.0)));  // the in-place add is visible in C++

  const auto same = kernel.call("identity", {x});
  CHECK(same.toTensor().unsafeGetTensorImpl() == x.unsafeGetTensorImpl());

  const auto echoed = kernel.call("echo", {x, 2.5, int64_t{7}, c10::IValue()},
                                  {{"flag", true}, {"name", std::string("q")}});
  REQUIRE(echoed.isTuple());
  const auto& parts = echoed.toTupleRef().elements();
  const auto& args = parts.at(0).toTupleRef().elements();
  REQUIRE(args.size() == 4);
  CHECK(args[0].toTensor().data_ptr() == x.data_ptr());
  CHECK(args[1].toDouble() == 2.5);
  CHECK(args[2].toInt() == 7);
  CHECK(args[3].isNone());
  const auto& kwargs = parts.at(1).toTupleRef().elements();
  REQUIRE(kwargs.size() == 2);
  CHECK(kwargs[0].toTupleRef().elements()[0].toStringRef() == "flag");
  CHECK(kwargs[0].toTupleRef().elements()[1].toBool());
  CHECK(kwargs[1].toTupleRef().elements()[1].toStringRef() == "q");
}

TEST_CASE("a Python kernel is named by its metadata id, with relative imports and its source",
          "[python]") {
  TempDir dir;
  write_noarch_kernel(dir.path(), ops_kernel());
  const kpy::Kernel kernel = kpy::get_local_kernel(dir.path());
  CHECK(kernel.module_name().starts_with("_py_ops_universal_"));
  CHECK(kernel.call("module_name").toStringRef() == kernel.module_name());
  CHECK(kernel.variant() == "torch-universal");
  CHECK(kernel.call("sub.helpers.twice", {int64_t{21}}).toInt() == 42);
  // inspect.getsource (what @triton.jit reads) comes from the loader, not from a file.
  CHECK(kernel.call("source_of_twice").toStringRef() == "def twice(x):\n    return 2 * x\n");
}

TEST_CASE("a Python exception becomes a PythonError with its type, message and innermost frame",
          "[python]") {
  TempDir dir;
  write_noarch_kernel(dir.path(), ops_kernel());
  const kpy::Kernel kernel = kpy::get_local_kernel(dir.path());
  try {
    kernel.call("fail", {std::string("bad shape")});
    FAIL("no exception");
  } catch (const kpy::PythonError& error) {
    CHECK(error.type() == "ValueError");
    CHECK(error.python_message() == "bad shape");
    CHECK(error.file() == "kernelhub://" + kernel.module_name() + "/sub/deep.py");
    CHECK(error.line() == 2);
    CHECK(error.function() == "raise_value_error");
    CHECK_THAT(error.what(), Catch::Contains("ValueError: bad shape"));
  }
  // The app and the kernel go on.
  CHECK(kernel.call("mark").toStringRef() == "original");
  CHECK_THROWS_AS(kernel.call("no_such_function"), kpy::PythonError);
}

TEST_CASE("what runs is what was verified: replacing a file afterwards changes nothing",
          "[python]") {
  TempDir dir;
  const auto variant = write_noarch_kernel(dir.path(), ops_kernel());
  const kpy::Kernel kernel = kpy::get_local_kernel(dir.path());
  // lazy.py is imported only on the first call, after it was replaced on disk.
  std::ofstream(variant / "lazy.py", std::ios::trunc) << "MARK = 'replaced'\n";
  std::ofstream(variant / "__init__.py", std::ios::app) << "\nMARK = 'replaced'\n";
  CHECK(kernel.call("lazy_mark").toStringRef() == "lazy original");
  CHECK(kernel.call("mark").toStringRef() == "original");
  // And a fresh load of the changed folder is refused: its bytes no longer verify.
  CHECK_THROWS_AS(kpy::get_local_kernel(dir.path()), kpy::KernelRefused);
}

TEST_CASE("calls from 8 threads at once", "[python]") {
  TempDir dir;
  write_noarch_kernel(dir.path(), ops_kernel());
  const kpy::Kernel kernel = kpy::get_local_kernel(dir.path());
  std::vector<std::thread> threads;
  threads.reserve(8);
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto x = at::full({16}, static_cast<double>(t));
        const auto out = kernel.call("add_", {x, at::ones({16})});
        if (out.toTensor().data_ptr() == x.data_ptr() && x[0].item<double>() == t + 1.0) ++ok[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 8; ++t) CHECK(ok[t] == 200);
}
