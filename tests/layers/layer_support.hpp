// What the layer tests with fixture kernels share: a record of the kernel ops a forward ran
// (the proof a kernel, not ATen, computed), mapping files written for a test, closeness.
#pragma once

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <ATen/ops/allclose.h>
#include <ATen/record_function.h>

namespace kernelhub::testing {

// Records the names of the dispatcher ops run on this thread while it lives that start with
// `prefix` (a fixture's namespace stem, e.g. "_activation_"), through RecordFunction.
class OpRecorder {
 public:
  explicit OpRecorder(std::string prefix) : prefix_(std::move(prefix)) {
    current() = this;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&OpRecorder::on_enter).scopes({at::RecordScope::FUNCTION}));
  }
  ~OpRecorder() {
    at::removeCallback(handle_);
    current() = nullptr;
  }
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;

  // Op names without the namespace ("silu_and_mul"), as run.
  const std::multiset<std::string>& ops() const { return ops_; }
  std::size_t count(const std::string& op) const { return ops_.count(op); }

 private:
  static OpRecorder*& current() {
    thread_local OpRecorder* recorder = nullptr;
    return recorder;
  }
  static std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
    OpRecorder* self = current();
    const std::string name = fn.name();
    if (self != nullptr && name.rfind(self->prefix_, 0) == 0) {
      self->ops_.insert(name.substr(name.find("::") + 2));
    }
    return nullptr;
  }

  std::string prefix_;
  at::CallbackHandle handle_ = 0;
  std::multiset<std::string> ops_;
};

inline bool all_close(const at::Tensor& a, const at::Tensor& b, double atol) {
  return at::allclose(a.to(at::kFloat), b.to(at::kFloat), 0.0, atol);
}

inline std::filesystem::path write_file(const std::filesystem::path& path,
                                        const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

// One [[layers]] entry of a mapping file.
inline std::string mapping_entry(const std::string& name, const std::string& repo,
                                 const std::string& layer, const std::string& extra,
                                 const std::string& device = "cpu") {
  return "[[layers]]\nname = \"" + name + "\"\ndevice = \"" + device + "\"\nrepo = \"" + repo +
         "\"\nlayer = \"" + layer + "\"\n" + extra + "\n";
}

}  // namespace kernelhub::testing
