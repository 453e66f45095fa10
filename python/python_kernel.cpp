// kernelhub::python's Kernel and the installed-module entry points; typed exceptions at this
// edge, values below.
#include "kernelhub/python_kernel.hpp"

#include "edge.hpp"
#include "kernelhub/provider/process_environment.hpp"
#include "kernelhub/python/import_kernel.hpp"
#include "kernelhub/util/error_table.hpp"
#include "runtime.hpp"

namespace kernelhub::python {
namespace detail {

void raise(const Error& error, const PythonFailure& failure) {
  if (error.code == ErrorCode::python_error) {
    throw PythonError(error.message, {failure.type, failure.message, failure.file, failure.line,
                                      failure.function, failure.traceback});
  }
  if (is_refused(error.code)) throw KernelRefused(error.message);
  throw BackendUnavailable(error.message);
}

Bridge& bridge() { return *value_or_raise(started_bridge(provider::process_environment())); }

}  // namespace detail

Kernel::State::~State() {
  for (auto& [path, object] : resolved) python->release(object);
  python->release(module);
}

Result<detail::ObjectRef> Kernel::State::attribute(std::string_view path,
                                                   detail::PythonFailure& failure) const {
  const std::lock_guard lock(mutex);
  if (const auto it = resolved.find(path); it != resolved.end()) return it->second;
  KH_TRY_ASSIGN(auto object, python->attribute(module, std::string(path), failure));
  resolved.emplace(std::string(path), object);
  return object;
}

c10::IValue Kernel::call(std::string_view function, const Args& args, const Kwargs& kwargs) const {
  detail::PythonFailure failure;
  const auto callable = detail::value_or_raise(state_->attribute(function, failure), failure);
  return detail::value_or_raise(state_->python->call(callable, {&args, &kwargs}, failure), failure);
}

bool Kernel::has(std::string_view attribute) const {
  detail::PythonFailure failure;
  return state_->attribute(attribute, failure).has_value();
}

const std::string& Kernel::module_name() const { return state_->module_name; }
const std::string& Kernel::repo() const { return state_->repo; }
const std::string& Kernel::variant() const { return state_->variant; }

Kernel import_installed(std::string_view module) {
  detail::Bridge& python = detail::bridge();
  detail::PythonFailure failure;
  auto state = std::make_shared<Kernel::State>();
  state->python = &python;
  state->module =
      detail::value_or_raise(python.import_module(std::string(module), failure), failure);
  state->module_name = std::string(module);
  state->repo = "installed:" + std::string(module);
  return Kernel(std::move(state));
}

std::optional<std::string> installed_version(std::string_view distribution) {
  const Kernel metadata = import_installed("importlib.metadata");
  try {
    const auto version = metadata.call("version", {c10::IValue(std::string(distribution))});
    if (version.isString()) return version.toStringRef();
  } catch (const PythonError& error) {
    if (error.type() == "importlib.metadata.PackageNotFoundError") return std::nullopt;
    throw;
  }
  return std::nullopt;
}

}  // namespace kernelhub::python
