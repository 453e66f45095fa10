// A Python exception as a C++ value: type, message, innermost frame, traceback.
#include "bridge_internal.hpp"

namespace kernelhub::python::bridge {
namespace {

std::string utf8_of(PyObject* object) {
  if (object == nullptr) return {};
  PyObject* text = PyObject_Str(object);
  if (text == nullptr) {
    PyErr_Clear();
    return "<unprintable>";
  }
  const char* utf8 = PyUnicode_AsUTF8(text);
  std::string out = utf8 != nullptr ? utf8 : "<unprintable>";
  if (utf8 == nullptr) PyErr_Clear();
  Py_DECREF(text);
  return out;
}

// The hook's describe(exc) into `failure`; false when it cannot run (before the hook exists,
// or it failed itself).
bool describe(PyObject* importer, PyObject* value, PythonFailure& failure) {
  if (importer == nullptr) return false;
  PyObject* described = PyObject_CallMethod(importer, "describe", "O", value);
  if (described == nullptr || !PyTuple_Check(described) || PyTuple_Size(described) != 6) {
    Py_XDECREF(described);
    PyErr_Clear();
    return false;
  }
  failure.type = utf8_of(PyTuple_GetItem(described, 0));
  failure.message = utf8_of(PyTuple_GetItem(described, 1));
  failure.file = utf8_of(PyTuple_GetItem(described, 2));
  failure.line = static_cast<int>(PyLong_AsLong(PyTuple_GetItem(described, 3)));
  failure.function = utf8_of(PyTuple_GetItem(described, 4));
  failure.traceback = utf8_of(PyTuple_GetItem(described, 5));
  Py_DECREF(described);
  PyErr_Clear();
  return true;
}

}  // namespace

Unexpected take_python_error(PyObject* importer, const std::string& context,
                             PythonFailure& failure) {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  if (type == nullptr) {
    return fail(ErrorCode::internal, context + ": failed without a Python exception");
  }
  PyErr_NormalizeException(&type, &value, &trace);
  if (trace != nullptr && value != nullptr) PyException_SetTraceback(value, trace);
  failure = PythonFailure{};
  if (!describe(importer, value, failure)) {
    PyObject* name = PyObject_GetAttrString(type, "__name__");
    failure.type = utf8_of(name);
    Py_XDECREF(name);
    failure.message = utf8_of(value);
    PyErr_Clear();
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  std::string message = context + ": " + failure.type;
  if (!failure.message.empty()) message += ": " + failure.message;
  if (!failure.file.empty()) {
    message += " (" + failure.file + ":" + std::to_string(failure.line);
    if (!failure.function.empty()) message += ", in " + failure.function;
    message += ")";
  }
  return fail(ErrorCode::python_error, std::move(message));
}

}  // namespace kernelhub::python::bridge
