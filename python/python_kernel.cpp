// kernelhub::python's app API over the runtime: typed exceptions at this edge, values below.
#include "kernelhub/python_kernel.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "kernelhub/python/import_kernel.hpp"
#include "kernelhub/util/error_table.hpp"
#include "python_depends.hpp"
#include "runtime.hpp"
#include "verified_package.hpp"

namespace kernelhub::python {
namespace {

using detail::Bridge;
using detail::ObjectRef;
using detail::PythonFailure;

[[noreturn]] void raise(const Error& error, const PythonFailure& failure = {}) {
  if (error.code == ErrorCode::python_error) {
    throw PythonError(error.message, {failure.type, failure.message, failure.file, failure.line,
                                      failure.function, failure.traceback});
  }
  if (is_refused(error.code)) throw KernelRefused(error.message);
  throw BackendUnavailable(error.message);
}

template <class T>
T value_or_raise(Result<T> result, const PythonFailure& failure = {}) {
  if (!result) raise(result.error(), failure);
  return std::move(*result);
}

Bridge& bridge() {
  static const util::Environment env = util::Environment::from_process();
  return *value_or_raise(detail::started_bridge(env));
}

// `python-depends`, checked importable before anything of the kernel runs.
void check_python_depends(Bridge& python, const detail::VerifiedPackage& package) {
  const std::string name = package.metadata.name.value_or(package.spec.module_name);
  auto packages = value_or_raise(
      detail::resolve_python_depends(package.metadata.python_depends, package.backend, name));
  std::vector<std::string> imports;
  for (const auto& p : packages) {
    if (p.import_name) imports.push_back(*p.import_name);
  }
  if (imports.empty()) return;
  PythonFailure failure;
  const auto missing = value_or_raise(python.missing_modules(imports, failure), failure);
  for (const auto& p : packages) {
    if (p.import_name &&
        std::find(missing.begin(), missing.end(), *p.import_name) != missing.end()) {
      throw BackendUnavailable("Kernel module `" + name + "` (" + package.spec.origin +
                               ") requires Python dependency `" + p.pip_package +
                               "`. Please install with: pip install " + p.pip_package +
                               " (kernelhub never installs packages)");
    }
  }
}

}  // namespace

struct Kernel::State {
  Bridge* python = nullptr;
  ObjectRef module = nullptr;
  std::string module_name;
  std::string repo;
  std::string variant;
  mutable std::mutex mutex;
  mutable std::map<std::string, ObjectRef, std::less<>> resolved;  // attribute path -> object

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    for (auto& [path, object] : resolved) python->release(object);
    python->release(module);
  }

  // The attribute, looked up once per path.
  Result<ObjectRef> attribute(std::string_view path, PythonFailure& failure) const {
    const std::lock_guard lock(mutex);
    if (const auto it = resolved.find(path); it != resolved.end()) return it->second;
    KH_TRY_ASSIGN(auto object, python->attribute(module, std::string(path), failure));
    resolved.emplace(std::string(path), object);
    return object;
  }
};

c10::IValue Kernel::call(std::string_view function, const Args& args, const Kwargs& kwargs) const {
  PythonFailure failure;
  const ObjectRef callable = value_or_raise(state_->attribute(function, failure), failure);
  return value_or_raise(state_->python->call(callable, {&args, &kwargs}, failure), failure);
}

bool Kernel::has(std::string_view attribute) const {
  PythonFailure failure;
  return state_->attribute(attribute, failure).has_value();
}

const std::string& Kernel::module_name() const { return state_->module_name; }
const std::string& Kernel::repo() const { return state_->repo; }
const std::string& Kernel::variant() const { return state_->variant; }

Kernel import_kernel(const loader::KernelSource& source, const std::filesystem::path& variant_dir) {
  auto package =
      value_or_raise(detail::read_package(source, variant_dir, loader::current_runtime()));
  Bridge& python = bridge();
  check_python_depends(python, package);
  PythonFailure failure;
  auto state = std::make_shared<Kernel::State>();
  state->python = &python;
  state->module = value_or_raise(python.import_package(package.spec, failure), failure);
  state->module_name = package.spec.module_name;
  state->repo = source.repo;
  state->variant = source.variant;
  return Kernel(std::move(state));
}

Kernel get_local_kernel(const std::filesystem::path& path) {
  auto source = value_or_raise(loader::open_local_kernel(path, "local:" + path.string(),
                                                         loader::current_runtime(),
                                                         loader::VariantKinds::compiled_or_python));
  std::error_code ec;
  const auto build = path / "build" / source.variant;
  const auto dir = std::filesystem::is_directory(build, ec) ? build : path;
  return import_kernel(source, dir);
}

Kernel import_installed(std::string_view module) {
  Bridge& python = bridge();
  PythonFailure failure;
  auto state = std::make_shared<Kernel::State>();
  state->python = &python;
  state->module = value_or_raise(python.import_module(std::string(module), failure), failure);
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
