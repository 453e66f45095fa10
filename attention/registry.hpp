// The backend table behind find_backend (backend.hpp), for the dispatcher's own state:
// lookups that do not throw and a dense index per backend (activation flags).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "kernelhub/attention/backend.hpp"

namespace kernelhub::attention::detail {

// The table entry, or nullptr.
const Backend* lookup_backend(std::string_view name);

// Number of backends; index of a table entry in [0, backend_count()).
std::size_t backend_count();
std::size_t backend_index(const Backend& backend);

// "Backend {name} is not registered." plus the valid names and a hint.
std::string unknown_backend_message(std::string_view name);

}  // namespace kernelhub::attention::detail
