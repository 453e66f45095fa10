// The table of every backend, built once from the four family registrations.
#include <algorithm>
#include <cctype>
#include <string>

#include "kernelhub/attention/backend.hpp"
#include "kernelhub/util/strings.hpp"
#include "registry.hpp"

namespace kernelhub::attention::detail {
namespace {

struct Table {
  std::vector<Backend> backends;
  // Parallel to backend_names(): the entry for each name.
  std::vector<const Backend*> by_name;
};

Table build_table() {
  Table table;
  register_native_backends(table.backends);
  register_hub_backends(table.backends);
  register_library_backends(table.backends);
  register_python_backends(table.backends);

  const auto& names = backend_names();
  std::string problems;
  for (const auto& backend : table.backends) {
    if (std::count(names.begin(), names.end(), backend.name) != 1) {
      problems += " '" + backend.name + "' is not a Diffusers backend name;";
    }
  }
  for (auto name : names) {
    const auto count = std::count_if(table.backends.begin(), table.backends.end(),
                                     [&](const Backend& b) { return b.name == name; });
    if (count != 1) {
      problems += " '" + std::string(name) + "' is registered " + std::to_string(count) + " times;";
    }
    if (count > 0) {
      table.by_name.push_back(&*std::find_if(table.backends.begin(), table.backends.end(),
                                             [&](const Backend& b) { return b.name == name; }));
    }
  }
  // A broken table is a bug in this library, not something a caller can fix.
  if (!problems.empty()) throw std::logic_error("kernelhub attention backend table:" + problems);
  return table;
}

const Table& table() {
  static const Table instance = build_table();
  return instance;
}

}  // namespace

const std::vector<std::string_view>& backend_names() {
  // Diffusers 0.42.1 AttentionBackendName order.
  static const std::vector<std::string_view> names = {
      "flash",
      "flash_hub",
      "flash_varlen",
      "flash_varlen_hub",
      "flash_4_hub",
      "_flash_3",
      "_flash_varlen_3",
      "_flash_3_hub",
      "_flash_3_varlen_hub",
      "aiter_fa2_hub",
      "flex",
      "native",
      "_native_cudnn",
      "_native_efficient",
      "_native_flash",
      "_native_math",
      "_native_npu",
      "_native_xla",
      "sage",
      "sage_hub",
      "sage_blackwell_hub",
      "sage_varlen",
      "_sage_qk_int8_pv_fp8_cuda",
      "_sage_qk_int8_pv_fp8_cuda_sm90",
      "_sage_qk_int8_pv_fp16_cuda",
      "_sage_qk_int8_pv_fp16_triton",
      "xformers",
  };
  return names;
}

const Backend* lookup_backend(std::string_view name) {
  const auto& names = backend_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return nullptr;
  return table().by_name[static_cast<std::size_t>(it - names.begin())];
}

std::size_t backend_count() { return table().backends.size(); }

std::size_t backend_index(const Backend& backend) {
  return static_cast<std::size_t>(&backend - table().backends.data());
}

std::string unknown_backend_message(std::string_view name) {
  std::string message = "Backend " + std::string(name) + " is not registered. Valid backends:";
  for (auto valid : backend_names()) message += " " + std::string(valid);
  const std::string lowered = util::ascii_lower(name);
  if (lowered != name && lookup_backend(lowered) != nullptr) {
    message += ". Did you mean " + lowered +
               "? Names are case-sensitive here (only set_attention_backend lowercases).";
  } else {
    message += ". Use one of these names (list_backends() returns them).";
  }
  return message;
}

const Backend& find_backend(std::string_view name) {
  if (const Backend* backend = lookup_backend(name)) return *backend;
  throw UnknownBackend(unknown_backend_message(name));
}

}  // namespace kernelhub::attention::detail
