// Small helpers for the dispatcher semantics tests: a model with nested Attention layers and
// scoped switches of the process-wide settings.
#pragma once

#include <memory>

#include <torch/nn/modules/container/modulelist.h>

#include "kernelhub/attention.hpp"

namespace kernelhub::testing {

// Two Attention layers, one of them nested in a ModuleList, as real models nest them.
struct TwoLayerModel : torch::nn::Module {
  TwoLayerModel() {
    first = register_module("first", attention::Attention());
    blocks = register_module("blocks", torch::nn::ModuleList(attention::Attention()));
  }
  attention::AttentionImpl& nested() { return *blocks->ptr<attention::AttentionImpl>(0); }
  attention::Attention first{nullptr};
  torch::nn::ModuleList blocks{nullptr};
};

class ChecksSwitch {
 public:
  explicit ChecksSwitch(bool enabled) : previous_(attention::checks_enabled()) {
    attention::set_checks_enabled(enabled);
  }
  ~ChecksSwitch() { attention::set_checks_enabled(previous_); }
  ChecksSwitch(const ChecksSwitch&) = delete;
  ChecksSwitch& operator=(const ChecksSwitch&) = delete;

 private:
  bool previous_;
};

}  // namespace kernelhub::testing
