// Operator lookup and boxed calls (kernel_ops.hpp), and the dispatcher's per-namespace view.
#include "kernelhub/loader/kernel_ops.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include <torch/csrc/jit/frontend/function_schema_parser.h>

#include "dispatcher_ops.hpp"

namespace kernelhub::loader {
namespace detail {

std::vector<std::string> registered_ops(std::string_view ops_namespace) {
  const std::string prefix = std::string(ops_namespace) + "::";
  std::vector<std::string> names;
  for (const auto& op : c10::Dispatcher::singleton().getAllOpNames()) {
    if (op.name.starts_with(prefix)) names.push_back(op.name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());  // one per overload
  return names;
}

}  // namespace detail

namespace {

// Arguments the caller left out take the schema's defaults; one without a default is an error.
std::vector<c10::IValue> complete(const std::string& op, const c10::FunctionSchema& schema,
                                  std::vector<std::optional<c10::IValue>> slots) {
  std::vector<c10::IValue> stack;
  stack.reserve(slots.size());
  const auto& arguments = schema.arguments();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i]) {
      stack.push_back(std::move(*slots[i]));
    } else if (arguments[i].default_value()) {
      stack.push_back(*arguments[i].default_value());
    } else {
      TORCH_CHECK(false, op, ": required argument '", arguments[i].name(),
                  "' is missing (schema: ", schema, ")");
    }
  }
  return stack;
}

}  // namespace

Result<KernelOp> KernelOp::find(const LoadedKernel& kernel, std::string_view op_name) {
  std::string name = kernel.ops_namespace + "::" + std::string(op_name);
  auto handle = c10::Dispatcher::singleton().findSchema({name, ""});
  if (handle) return KernelOp(std::move(name), std::move(*handle));
  const auto existing = detail::registered_ops(kernel.ops_namespace);
  std::string listing;
  for (const auto& op : existing) listing += (listing.empty() ? "" : ", ") + op;
  return fail(ErrorCode::op_not_found,
              "kernel " + kernel.repo + " has no operator " + name +
                  (existing.empty() ? "; nothing is registered under " + kernel.ops_namespace
                                    : "; it registers " + listing));
}

Result<KernelOp> KernelOp::find_with_schema(const LoadedKernel& kernel, std::string_view op_name,
                                            std::string_view expected) {
  KH_TRY_ASSIGN(KernelOp op, find(kernel, op_name));
  std::ostringstream have;
  have << op.schema();
  std::ostringstream want;
  try {
    want << torch::jit::parseSchema(kernel.ops_namespace + "::" + std::string(expected));
  } catch (const c10::Error& error) {
    return fail(ErrorCode::internal, "expected schema '" + std::string(expected) +
                                         "' does not parse: " + error.what_without_backtrace());
  }
  if (have.str() != want.str()) {
    // The wanted schema as the caller wrote it: the printer's alias sets ("Tensor($0! -> )")
    // say less to a reader than "Tensor!".
    return fail(ErrorCode::incompatible_kernel,
                "kernel " + kernel.repo + " registers " + have.str() + ", but the caller needs " +
                    kernel.ops_namespace + "::" + std::string(expected) +
                    "; its build is for another interface");
  }
  return op;
}

bool KernelOp::has_kernel_for(c10::DispatchKey key) const {
  return handle_.hasKernelForDispatchKey(key);
}

std::vector<c10::IValue> KernelOp::call(std::vector<c10::IValue> arguments) const {
  const auto& schema = handle_.schema();
  const std::size_t count = schema.arguments().size();
  TORCH_CHECK(arguments.size() <= count, name_, " takes ", count, " arguments, ", arguments.size(),
              " were given (schema: ", schema, ")");
  std::vector<std::optional<c10::IValue>> slots(count);
  for (std::size_t i = 0; i < arguments.size(); ++i) slots[i] = std::move(arguments[i]);
  auto stack = complete(name_, schema, std::move(slots));
  handle_.callBoxed(stack);
  return stack;
}

std::vector<c10::IValue> KernelOp::call_named(
    std::vector<std::pair<std::string_view, c10::IValue>> arguments) const {
  const auto& schema = handle_.schema();
  std::vector<std::optional<c10::IValue>> slots(schema.arguments().size());
  for (auto& [name, value] : arguments) {
    const auto index = schema.argumentIndexWithName(name);
    TORCH_CHECK(index.has_value(), name_, " has no argument '", name, "' (schema: ", schema, ")");
    TORCH_CHECK(!slots[*index], name_, ": argument '", name, "' is given twice");
    slots[*index] = std::move(value);
  }
  auto stack = complete(name_, schema, std::move(slots));
  handle_.callBoxed(stack);
  return stack;
}

std::vector<at::Tensor> output_tensors(std::vector<c10::IValue> outputs) {
  std::vector<at::Tensor> tensors;
  auto add = [&](const c10::IValue& value) {
    if (value.isNone()) {
      tensors.emplace_back();  // an optional output that was not produced
    } else {
      TORCH_CHECK(value.isTensor(), "kernel output is a ", value.tagKind(), ", not a tensor");
      tensors.push_back(value.toTensor());
    }
  };
  for (const auto& output : outputs) {
    if (output.isTuple()) {
      for (const auto& element : output.toTupleRef().elements()) add(element);
    } else if (output.isList()) {  // Tensor[] and Tensor?[]
      for (const auto& element : output.toListRef()) add(element);
    } else {
      add(output);
    }
  }
  return tensors;
}

}  // namespace kernelhub::loader
