// Private to kernelhub_python_bridge: the pieces bridge.cpp puts together. Every function
// here runs with the interpreter lock held by the caller.
#pragma once

#include <Python.h>

#include <string>

#include <ATen/core/ivalue.h>

#include "bridge_api.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::python::detail {
// The import hook's Python source (kernelhub_importer.py, embedded at build time).
extern const char* const kImporterSource;
}  // namespace kernelhub::python::detail

namespace kernelhub::python::bridge {

using detail::InterpreterSetup;
using detail::PythonFailure;

// The interpreter lock for one scope, from any thread (PyGILState: the thread need not be
// known to Python).
class GilLock {
 public:
  GilLock() : state_(PyGILState_Ensure()) {}
  ~GilLock() { PyGILState_Release(state_); }
  GilLock(const GilLock&) = delete;
  GilLock& operator=(const GilLock&) = delete;

 private:
  PyGILState_STATE state_;
};

// Starts an isolated interpreter of our own; the calling thread holds its lock afterwards.
// Does nothing (owns = false) when the process already runs Python.
Result<void> start_interpreter(const InterpreterSetup& setup, bool& owns);

// Imports torch (it must be the package at setup.torch_dir) and the import hook module.
// Returns a new reference to the hook module.
Result<PyObject*> prepare_interpreter(const InterpreterSetup& setup, PythonFailure& failure);

// The Python exception being handled: described into `failure` (the import hook's
// describe()), cleared, and returned as a python_error. `context` prefixes the message.
Unexpected take_python_error(PyObject* importer, const std::string& context,
                             PythonFailure& failure);

// Values across the boundary: tensors are shared (same TensorImpl), never copied.
// Both return nullptr / an error with a Python exception set or described.
PyObject* to_python(const c10::IValue& value);
Result<c10::IValue> to_ivalue(PyObject* object);

}  // namespace kernelhub::python::bridge
