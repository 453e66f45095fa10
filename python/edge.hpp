// Shared by kh_python's API files: the started bridge, and errors thrown as the typed
// exceptions of python_kernel.hpp (the edge: values below, exceptions above).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "bridge_api.hpp"
#include "kernelhub/python_kernel.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::python::detail {

// PythonError for python_error (with `failure`), KernelRefused for a refusal (is_refused),
// BackendUnavailable otherwise.
[[noreturn]] void raise(const Error& error, const PythonFailure& failure = {});

template <class T>
T value_or_raise(Result<T> result, const PythonFailure& failure = {}) {
  if (!result) raise(result.error(), failure);
  return std::move(*result);
}

// The bridge, started on first use with the provider's view of the process environment.
Bridge& bridge();

}  // namespace kernelhub::python::detail

namespace kernelhub::python {

struct Kernel::State {
  detail::Bridge* python = nullptr;
  detail::ObjectRef module = nullptr;
  std::string module_name;
  std::string repo;
  std::string variant;
  mutable std::mutex mutex;
  mutable std::map<std::string, detail::ObjectRef, std::less<>> resolved;  // path -> object

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State();

  // The attribute along a dotted path, looked up once per path.
  Result<detail::ObjectRef> attribute(std::string_view path, detail::PythonFailure& failure) const;
};

}  // namespace kernelhub::python
