// Looking up a loaded kernel's operators in the c10 dispatcher and calling them boxed.
// Boxed calls, because exact C++ signatures differ between builds of the same kernel
// (Tensor[] on the full ABI, tuples on the stable ABI) while the schemas stay comparable.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::loader {

class KernelOp {
 public:
  // `<namespace>::<op_name>` with the empty overload name; op_not_found otherwise.
  static Result<KernelOp> find(const LoadedKernel& kernel, std::string_view op_name);

  // find, then a refusal unless the op's schema is `expected` ("silu_and_mul(Tensor! out,
  // Tensor input) -> ()", without the namespace), compared as the dispatcher prints both:
  // a caller that unboxes arguments by a schema never calls an op of another one.
  // incompatible_kernel names both schemas.
  static Result<KernelOp> find_with_schema(const LoadedKernel& kernel, std::string_view op_name,
                                           std::string_view expected);

  const std::string& qualified_name() const { return name_; }
  const c10::OperatorHandle& handle() const { return handle_; }
  const c10::FunctionSchema& schema() const { return handle_.schema(); }
  bool has_kernel_for(c10::DispatchKey key) const;

  // Positional arguments; trailing ones left out take the schema's defaults (an argument
  // without a default that is left out is a c10::Error naming it). Returns the outputs as
  // pushed by the kernel: N values for a tuple, one TensorList for Tensor[].
  std::vector<c10::IValue> call(std::vector<c10::IValue> arguments) const;

  // Arguments by schema name; every other argument takes its default.
  std::vector<c10::IValue> call_named(
      std::vector<std::pair<std::string_view, c10::IValue>> arguments) const;

 private:
  KernelOp(std::string name, c10::OperatorHandle handle)
      : name_(std::move(name)), handle_(std::move(handle)) {}
  std::string name_;
  c10::OperatorHandle handle_;
};

// Outputs of a call as tensors, whether the kernel returned a tuple or a Tensor[].
std::vector<at::Tensor> output_tensors(std::vector<c10::IValue> outputs);

}  // namespace kernelhub::loader
