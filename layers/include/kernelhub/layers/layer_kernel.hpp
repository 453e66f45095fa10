// A Hub kernel's layer, ready to stand in for a module's forward: a native adapter over the
// kernel's ops (native_adapters.cpp) or the kernel's Python layer class (python_layers.cpp).
// Stateless like kernels' layer classes: it reads the module's attributes at each call, so
// one LayerKernel serves every module bound to it.
#pragma once

#include <string>
#include <tuple>

#include <ATen/core/Tensor.h>

#include "kernelhub/layers.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::layers {

class LayerKernel {
 public:
  virtual ~LayerKernel() = default;
  LayerKernel() = default;
  LayerKernel(const LayerKernel&) = delete;
  LayerKernel& operator=(const LayerKernel&) = delete;

  virtual LayerSignature signature() const = 0;
  // kernels' class flags: has_backward (default true there; an adapter says what its ops
  // do) and can_torch_compile.
  virtual bool has_backward() const = 0;
  virtual bool can_torch_compile() const = 0;
  // "kernels-community/activation@<commit> (torch215-cxx11-cpu-x86_64-linux) layers.SiluAndMul,
  // native"
  virtual const std::string& describe() const = 0;

  // Refuses a module this layer cannot serve: an attribute its forward reads is missing.
  virtual Result<void> check_module(const KernelizableLayer& module) const = 0;

  // LayerSignature::tensor.
  virtual at::Tensor forward(const KernelizableLayer& module, const at::Tensor& x) const;
  // LayerSignature::rotary.
  virtual std::tuple<at::Tensor, at::Tensor> forward(const KernelizableLayer& module,
                                                     const at::Tensor& q, const at::Tensor& k,
                                                     const at::Tensor& cos, const at::Tensor& sin,
                                                     int64_t unsqueeze_dim) const;
};

}  // namespace kernelhub::layers
