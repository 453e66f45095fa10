// kernelhub_python_bridge's one export: the Bridge (bridge_api.hpp) over the CPython C API.
#include "bridge_internal.hpp"

namespace kernelhub::python::bridge {
namespace {

using detail::CallArguments;
using detail::ObjectRef;
using detail::PackageSpec;

// A new reference, dropped at scope end.
class Owned {
 public:
  explicit Owned(PyObject* object = nullptr) : object_(object) {}
  ~Owned() { Py_XDECREF(object_); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  PyObject* get() const { return object_; }
  PyObject* release() { return std::exchange(object_, nullptr); }
  explicit operator bool() const { return object_ != nullptr; }

 private:
  PyObject* object_;
};

PyObject* to_bytes(const std::string& bytes) {
  return PyBytes_FromStringAndSize(bytes.data(), static_cast<Py_ssize_t>(bytes.size()));
}

class CPythonBridge final : public detail::Bridge {
 public:
  int abi() const override { return detail::kBridgeAbi; }
  bool owns_interpreter() const override { return owns_; }

  Result<void> start(const InterpreterSetup& setup, PythonFailure& failure) override {
    KH_TRY(start_interpreter(setup, owns_));
    // Our own interpreter: this thread holds its lock until the end of start(). The host's:
    // take it like any other thread.
    std::optional<GilLock> host_lock;
    if (!owns_) host_lock.emplace();
    auto prepared = prepare_interpreter(setup, failure);
    if (prepared) {
      importer_ = *prepared;
      if (owns_) use_spawn();
    }
    // Released for good (the interpreter is never finalised, so its state is not restored):
    // from now on the lock is taken per call.
    if (owns_) PyEval_SaveThread();
    if (!prepared) return fail(prepared.error());
    return ok();
  }

  Result<std::vector<std::string>> missing_modules(const std::vector<std::string>& names,
                                                   PythonFailure& failure) override {
    GilLock gil;
    Owned list(PyList_New(0));
    for (const auto& name : names) {
      Owned text(PyUnicode_FromString(name.c_str()));
      if (!text || PyList_Append(list.get(), text.get()) != 0) break;
    }
    Owned absent(PyObject_CallMethod(importer_, "missing", "O", list.get()));
    if (!absent) return take_python_error(importer_, "checking python-depends", failure);
    std::vector<std::string> out;
    for (Py_ssize_t i = 0; i < PyList_Size(absent.get()); ++i) {
      const char* utf8 = PyUnicode_AsUTF8(PyList_GetItem(absent.get(), i));
      if (utf8 != nullptr) out.emplace_back(utf8);
    }
    PyErr_Clear();
    return out;
  }

  Result<ObjectRef> import_package(const PackageSpec& spec, PythonFailure& failure) override {
    GilLock gil;
    Owned files(PyDict_New());
    for (const auto& file : spec.files) {
      Owned bytes(to_bytes(file.bytes));
      if (!bytes || PyDict_SetItemString(files.get(), file.path.c_str(), bytes.get()) != 0) {
        return take_python_error(importer_, "cannot hold " + spec.origin, failure);
      }
    }
    Owned dependencies(PyDict_New());
    for (const auto& dependency : spec.dependencies) {
      Owned module(dependency.module != nullptr
                       ? (Py_INCREF(static_cast<PyObject*>(dependency.module)),
                          static_cast<PyObject*>(dependency.module))
                       : PyObject_CallMethod(importer_, "native_dependency", "s",
                                             dependency.ops_namespace.c_str()));
      if (!module ||
          PyDict_SetItemString(dependencies.get(), dependency.repo.c_str(), module.get()) != 0) {
        return take_python_error(importer_, "dependency " + dependency.repo, failure);
      }
    }
    Owned module(PyObject_CallMethod(importer_, "install", "sOsssO", spec.module_name.c_str(),
                                     files.get(), spec.root.c_str(), spec.display_dir.c_str(),
                                     spec.origin.c_str(), dependencies.get()));
    if (!module) return take_python_error(importer_, "importing " + spec.origin, failure);
    return static_cast<ObjectRef>(module.release());
  }

  Result<ObjectRef> import_module(const std::string& name, PythonFailure& failure) override {
    GilLock gil;
    PyObject* module = PyImport_ImportModule(name.c_str());
    if (module == nullptr) return take_python_error(importer_, "import " + name, failure);
    return static_cast<ObjectRef>(module);
  }

  Result<ObjectRef> attribute(ObjectRef base, const std::string& path,
                              PythonFailure& failure) override {
    GilLock gil;
    auto* current = static_cast<PyObject*>(base);
    Py_INCREF(current);
    std::size_t start = 0;
    while (start <= path.size()) {
      const auto dot = path.find('.', start);
      const std::string part =
          path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      PyObject* next = PyObject_GetAttrString(current, part.c_str());
      Py_DECREF(current);
      if (next == nullptr) return take_python_error(importer_, "looking up " + path, failure);
      current = next;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return static_cast<ObjectRef>(current);
  }

  Result<c10::IValue> call(ObjectRef callable, const CallArguments& arguments,
                           PythonFailure& failure) override {
    GilLock gil;
    const auto& args = *arguments.args;
    Owned tuple(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
    if (!tuple) return take_python_error(importer_, "call", failure);
    for (std::size_t i = 0; i < args.size(); ++i) {
      PyObject* item = to_python(args[i]);
      if (item == nullptr)
        return take_python_error(importer_, "argument " + std::to_string(i), failure);
      PyTuple_SET_ITEM(tuple.get(), static_cast<Py_ssize_t>(i), item);  // steals
    }
    const bool has_kwargs = arguments.kwargs != nullptr && !arguments.kwargs->empty();
    Owned kwargs(has_kwargs ? PyDict_New() : nullptr);
    if (has_kwargs) {
      for (const auto& [name, value] : *arguments.kwargs) {
        Owned item(to_python(value));
        if (!item || PyDict_SetItemString(kwargs.get(), name.c_str(), item.get()) != 0) {
          return take_python_error(importer_, "argument " + name, failure);
        }
      }
    }
    Owned result(PyObject_Call(static_cast<PyObject*>(callable), tuple.get(), kwargs.get()));
    if (!result) return take_python_error(importer_, "the kernel raised", failure);
    auto value = to_ivalue(result.get());
    if (!value && PyErr_Occurred() != nullptr) {
      return take_python_error(importer_, "converting the result", failure);
    }
    return value;
  }

  void release(ObjectRef object) override {
    if (object == nullptr) return;
    GilLock gil;
    Py_DECREF(static_cast<PyObject*>(object));
  }

 private:
  // fork() after CUDA is initialised breaks the child; a kernel's multiprocessing must spawn.
  static void use_spawn() {
    Owned multiprocessing(PyImport_ImportModule("multiprocessing"));
    if (multiprocessing) {
      Owned done(
          PyObject_CallMethod(multiprocessing.get(), "set_start_method", "sO", "spawn", Py_False));
    }
    PyErr_Clear();  // already set by someone else: theirs stands
  }

  bool owns_ = false;
  PyObject* importer_ = nullptr;  // the hook module, kept for the process's life
};

}  // namespace
}  // namespace kernelhub::python::bridge

extern "C" __attribute__((visibility("default"))) kernelhub::python::detail::Bridge*
kh_python_bridge_v1() {
  // Never destroyed: the interpreter outlives every static destructor that could run
  // Python, and is never finalised (torch does not support it).
  static auto* bridge = new kernelhub::python::bridge::CPythonBridge;
  return bridge;
}
