// IValue <-> Python. Towards Python, torch's own conversion (torch::jit::toPyObject); back,
// torch's type inference is not exported from libtorch_python, so the result shapes a
// kernel returns are converted here: a tensor crosses as the same TensorImpl
// (THPVariable_Wrap / THPVariable_Unpack), so both sides see one storage.
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include "bridge_internal.hpp"

namespace kernelhub::python::bridge {
namespace {

constexpr int kMaxDepth = 32;  // nesting of tuples, lists and dicts in a result

std::string type_name(PyObject* object) {
  return Py_TYPE(object)->tp_name != nullptr ? Py_TYPE(object)->tp_name : "?";
}

Result<c10::IValue> convert(PyObject* object, int depth);

Result<std::vector<c10::IValue>> convert_items(PyObject* sequence, int depth) {
  std::vector<c10::IValue> items;
  const Py_ssize_t size = PySequence_Fast_GET_SIZE(sequence);
  items.reserve(static_cast<std::size_t>(size));
  for (Py_ssize_t i = 0; i < size; ++i) {
    KH_TRY_ASSIGN(auto item, convert(PySequence_Fast_GET_ITEM(sequence, i), depth + 1));
    items.push_back(std::move(item));
  }
  return items;
}

// A list of one element type becomes that typed list (List[Tensor], List[int], ...), as
// TorchScript types it; a mixed one, a list of Any.
c10::IValue to_list(std::vector<c10::IValue> items) {
  auto all = [&](auto predicate) { return std::all_of(items.begin(), items.end(), predicate); };
  if (!items.empty() && all([](const c10::IValue& v) { return v.isTensor(); })) {
    c10::List<at::Tensor> list;
    for (auto& item : items) list.push_back(std::move(item).toTensor());
    return list;
  }
  if (!items.empty() && all([](const c10::IValue& v) { return v.isInt(); })) {
    c10::List<int64_t> list;
    for (const auto& item : items) list.push_back(item.toInt());
    return list;
  }
  if (!items.empty() && all([](const c10::IValue& v) { return v.isDouble(); })) {
    c10::List<double> list;
    for (const auto& item : items) list.push_back(item.toDouble());
    return list;
  }
  c10::impl::GenericList list(c10::AnyType::get());
  for (auto& item : items) list.push_back(std::move(item));
  return list;
}

Result<c10::IValue> convert_dict(PyObject* dict, int depth) {
  c10::impl::GenericDict out(c10::StringType::get(), c10::AnyType::get());
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  Py_ssize_t position = 0;
  while (PyDict_Next(dict, &position, &key, &value) != 0) {
    if (!PyUnicode_Check(key)) {
      return fail(ErrorCode::python_error, "the kernel returned a dict with a " + type_name(key) +
                                               " key; only str keys cross to C++");
    }
    const char* utf8 = PyUnicode_AsUTF8(key);
    if (utf8 == nullptr) return fail(ErrorCode::python_error, "");
    KH_TRY_ASSIGN(auto item, convert(value, depth + 1));
    out.insert(std::string(utf8), std::move(item));
  }
  return c10::IValue(out);
}

Result<c10::IValue> convert(PyObject* object, int depth) {
  if (depth > kMaxDepth) {
    return fail(ErrorCode::python_error, "the kernel's result is nested more than " +
                                             std::to_string(kMaxDepth) + " levels deep");
  }
  if (object == Py_None) return c10::IValue();
  if (THPVariable_Check(object)) return c10::IValue(THPVariable_Unpack(object));
  if (PyBool_Check(object)) return c10::IValue(object == Py_True);
  if (PyLong_Check(object)) {
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (overflow != 0) {
      return fail(ErrorCode::python_error, "the kernel returned an int beyond 64 bits");
    }
    return c10::IValue(static_cast<int64_t>(value));
  }
  if (PyFloat_Check(object)) return c10::IValue(PyFloat_AS_DOUBLE(object));
  if (PyUnicode_Check(object)) {
    const char* utf8 = PyUnicode_AsUTF8(object);
    if (utf8 == nullptr) return fail(ErrorCode::python_error, "");
    return c10::IValue(std::string(utf8));
  }
  if (PyTuple_Check(object) || PyList_Check(object)) {
    KH_TRY_ASSIGN(auto items, convert_items(object, depth));  // tuples and lists are "fast"
    if (PyTuple_Check(object)) return c10::IValue(c10::ivalue::Tuple::create(std::move(items)));
    return to_list(std::move(items));
  }
  if (PyDict_Check(object)) return convert_dict(object, depth);
  return fail(ErrorCode::python_error,
              "the kernel returned a " + type_name(object) +
                  ", which cannot cross to C++ (tensors, bool, int, float, str, None, and tuples, "
                  "lists and str-keyed dicts of them can)");
}

}  // namespace

PyObject* to_python(const c10::IValue& value) {
  // The common arguments directly (a call's tensors and flags); the rest through torch.
  if (value.isTensor()) return THPVariable_Wrap(value.toTensor());
  if (value.isNone()) return Py_NewRef(Py_None);
  if (value.isBool()) return PyBool_FromLong(value.toBool() ? 1 : 0);
  if (value.isInt()) return PyLong_FromLongLong(value.toInt());
  if (value.isDouble()) return PyFloat_FromDouble(value.toDouble());
  try {
    return torch::jit::toPyObject(value).release().ptr();
  } catch (pybind11::error_already_set& error) {
    error.restore();
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_TypeError,
                    (std::string("cannot pass this value to Python: ") + error.what()).c_str());
  }
  return nullptr;
}

Result<c10::IValue> to_ivalue(PyObject* object) { return convert(object, 0); }

}  // namespace kernelhub::python::bridge
