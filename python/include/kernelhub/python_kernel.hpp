// Python-only Hub kernels, called from C++ (libkernelhub).
//
//   namespace kpy = kernelhub::python;
//   kpy::Kernel k = kpy::get_kernel("kernels-community/some-kernel", {.version = 1});
//   c10::IValue out = k.call("function", {q, key, v}, {{"causal", true}});
//
// Half of the Hub's kernels ship Python (Triton, CuTe DSL, plain PyTorch) instead of a shared
// object. kernelhub runs them in an embedded CPython, started on the first such kernel: the
// Python that KERNELHUB_PYTHON names (else python3 on PATH, e.g. an active venv), which must
// import the very torch this process runs. KERNELHUB_PYTHON=off forbids it. When the process
// already runs Python (libkernelhub inside a Python extension), that interpreter is used.
//
// The kernel is fetched like every hub kernel (kernelhubd, else the embedded cache; trust,
// lockfile, signatures, digests), and imported from the bytes that were verified, never from
// the files on disk. Tensors cross without copies. The interpreter lock is taken per call
// and released between calls. A Python kernel runs with every right the process has: the
// trust rule is the defence (docs/python-kernels.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>

namespace kernelhub::python {

class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The kernel cannot run in this process: no usable Python, another torch, a missing
// `python-depends` package, a build for another device, a failed fetch.
class BackendUnavailable : public KernelError {
 public:
  using KernelError::KernelError;
};

// Refused by a rule or by verification: the trust rule, a lockfile, the signature policy,
// a digest that does not match, an unsafe file.
class KernelRefused : public BackendUnavailable {
 public:
  using BackendUnavailable::BackendUnavailable;
};

// The kernel's Python raised (while importing, or in a call). The process is unharmed: a
// failed import leaves nothing of the kernel behind.
class PythonError : public KernelError {
 public:
  struct Details {
    std::string type;     // "ValueError", "triton.compiler.errors.CompilationError"
    std::string message;  // str(exception)
    std::string file;     // innermost frame ("kernelhub://<module>/<path>" for kernel code)
    int line = 0;
    std::string function;
    std::string traceback;
  };
  PythonError(const std::string& what, Details details)
      : KernelError(what), details_(std::move(details)) {}
  const std::string& type() const { return details_.type; }
  const std::string& python_message() const { return details_.message; }
  const std::string& file() const { return details_.file; }
  int line() const { return details_.line; }
  const std::string& function() const { return details_.function; }
  const std::string& traceback() const { return details_.traceback; }

 private:
  Details details_;
};

struct KernelOptions {
  std::optional<std::uint64_t> version = std::nullopt;  // branch v<N>
  std::optional<std::string> revision = std::nullopt;   // a branch, tag or commit; not with version
};

using Args = std::vector<c10::IValue>;
using Kwargs = std::vector<std::pair<std::string, c10::IValue>>;

class Kernel {
 public:
  // module.<function>(*args, **kwargs); `function` may be a dotted path ("layers.RMSNorm").
  // The result: tensors (the same storage the kernel returned), numbers, strings, None, and
  // tuples/lists/dicts of them. PythonError when the kernel raises.
  c10::IValue call(std::string_view function, const Args& args = {},
                   const Kwargs& kwargs = {}) const;
  // Whether the module has this attribute (a dotted path too).
  bool has(std::string_view attribute) const;

  const std::string& module_name() const;  // metadata.json `id`, the sys.modules name
  const std::string& repo() const;
  const std::string& variant() const;

  struct State;  // python/edge.hpp
  explicit Kernel(std::shared_ptr<State> state) : state_(std::move(state)) {}
  const std::shared_ptr<State>& state() const { return state_; }

 private:
  std::shared_ptr<State> state_;
};

// Fetches (kernelhubd when one runs, else in-process), verifies and imports a Python-only
// kernel. With neither version nor revision: v1. KERNELHUB_LOCKFILE pins it as it pins
// every hub kernel. Throws BackendUnavailable, KernelRefused or PythonError.
Kernel get_kernel(std::string_view repo, const KernelOptions& options = {});

// A kernel build on the local disk: a variant folder, or a folder with build/<variant>/
// (kernels.get_local_kernel). Its files are checked against its metadata.json digests.
Kernel get_local_kernel(const std::filesystem::path& path);

}  // namespace kernelhub::python
