// Starting the embedded interpreter: isolated (no user site, no PYTHON* variables, no current
// directory on sys.path), no signal handlers (the app's stay in force), no bytecode written;
// sys.path is the one the user's python computes for itself (interpreter_probe.cpp).
#include <filesystem>

#include "bridge_internal.hpp"

namespace kernelhub::python::bridge {
namespace {

// Sets one PyConfig string from UTF-8 / locale bytes.
Result<void> set_string(PyConfig& config, wchar_t** field, const std::string& value) {
  if (value.empty()) return ok();
  const PyStatus status = PyConfig_SetBytesString(&config, field, value.c_str());
  if (PyStatus_Exception(status)) {
    return fail(ErrorCode::load_failed, "cannot configure the embedded Python with '" + value +
                                            "': " + (status.err_msg ? status.err_msg : "?"));
  }
  return ok();
}

Result<void> append_path(PyConfig& config, const std::string& path) {
  wchar_t* wide = Py_DecodeLocale(path.c_str(), nullptr);
  if (wide == nullptr) {
    return fail(ErrorCode::load_failed, "cannot decode the sys.path entry '" + path + "'");
  }
  const PyStatus status = PyWideStringList_Append(&config.module_search_paths, wide);
  PyMem_RawFree(wide);
  if (PyStatus_Exception(status)) {
    return fail(ErrorCode::load_failed, "cannot add '" + path + "' to the embedded sys.path");
  }
  return ok();
}

Result<void> configure(PyConfig& config, const InterpreterSetup& setup) {
  config.install_signal_handlers = 0;  // SIGINT/SIGTERM stay the app's
  config.write_bytecode = 0;           // sys.dont_write_bytecode: no __pycache__ anywhere
  config.site_import = 0;              // sys.path below is already what site computed
  config.user_site_directory = 0;
  config.pathconfig_warnings = 0;
  config.parse_argv = 0;
  config.safe_path = 1;
  KH_TRY(set_string(config, &config.program_name, setup.executable));
  KH_TRY(set_string(config, &config.executable, setup.executable));
  KH_TRY(set_string(config, &config.prefix, setup.prefix));
  KH_TRY(set_string(config, &config.exec_prefix, setup.exec_prefix));
  KH_TRY(set_string(config, &config.base_prefix, setup.base_prefix));
  KH_TRY(set_string(config, &config.base_exec_prefix, setup.base_exec_prefix));
  config.module_search_paths_set = 1;
  for (const auto& path : setup.module_search_paths) KH_TRY(append_path(config, path));
  return ok();
}

// A new reference to sys.modules[name] after importing it, or nullptr with the error set.
PyObject* import(const char* name) { return PyImport_ImportModule(name); }

}  // namespace

Result<void> start_interpreter(const InterpreterSetup& setup, bool& owns) {
  owns = false;
  if (Py_IsInitialized() != 0) return ok();
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  auto configured = configure(config, setup);
  if (!configured) {
    PyConfig_Clear(&config);
    return configured;
  }
  const PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    return fail(ErrorCode::load_failed, std::string("the embedded Python did not start: ") +
                                            (status.func ? std::string(status.func) + ": " : "") +
                                            (status.err_msg ? status.err_msg : "unknown error"));
  }
  owns = true;
  return ok();
}

Result<PyObject*> prepare_interpreter(const InterpreterSetup& setup, PythonFailure& failure) {
  // torch first: nothing may touch a tensor's Python side before its bindings exist.
  PyObject* torch = import("torch");
  if (torch == nullptr) return take_python_error(nullptr, "import torch failed", failure);
  PyObject* file = PyObject_GetAttrString(torch, "__file__");
  Py_DECREF(torch);
  if (file == nullptr) return take_python_error(nullptr, "torch has no __file__", failure);
  const char* utf8 = PyUnicode_AsUTF8(file);
  std::string torch_file = utf8 != nullptr ? utf8 : "";
  Py_DECREF(file);
  if (utf8 == nullptr) return take_python_error(nullptr, "torch.__file__", failure);
  std::error_code ec;
  const auto imported =
      std::filesystem::weakly_canonical(std::filesystem::path(torch_file).parent_path(), ec);
  const auto expected = std::filesystem::weakly_canonical(setup.torch_dir, ec);
  if (!setup.torch_dir.empty() && imported != expected) {
    return fail(ErrorCode::incompatible_kernel,
                "the embedded Python imported torch from " + imported.string() + ", not " +
                    expected.string() + ", the torch whose libtorch this process runs");
  }

  PyObject* modules = PySys_GetObject("modules");  // borrowed
  if (PyObject* existing = PyDict_GetItemString(modules, "_kernelhub_importer")) {
    Py_INCREF(existing);  // another copy of libkernelhub in this process installed it
    return existing;
  }
  PyObject* code = Py_CompileString(detail::kImporterSource, "kernelhub://importer", Py_file_input);
  if (code == nullptr) return take_python_error(nullptr, "the import hook", failure);
  PyObject* module = PyImport_ExecCodeModule("_kernelhub_importer", code);
  Py_DECREF(code);
  if (module == nullptr) return take_python_error(nullptr, "the import hook", failure);
  return module;
}

}  // namespace kernelhub::python::bridge
