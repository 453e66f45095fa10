// Process-wide dispatcher state. Two backends, because Diffusers' one global serves two
// readers and set_attention_backend must not leak into other models (#14249):
//  - active: what dispatch_attention uses without options.backend (guard, env,
//    set_attention_backend);
//  - scoped: what an Attention layer without its own backend uses (guard, env only).
// Both start as DIFFUSERS_ATTN_BACKEND (default native), validated and activated lazily on
// first use. Resolution is a lock-free pointer load once a backend has been resolved.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "kernelhub/attention/backend.hpp"

namespace kernelhub::attention::detail {

// Runs backend.activate once per process (retried after a failure); thread-safe.
void ensure_activated(const Backend& backend);

// The active / scoped backend, activated.
const Backend& active();
const Backend& scoped();

// find_backend + ensure_activated, with a per-thread cache of the last name.
const Backend& resolve_named(std::string_view name);

// Sets both (BackendGuard) and returns the previous names {active, scoped}.
std::pair<std::string, std::string> swap_backends(const Backend& backend);
// Restores names saved by swap_backends; never throws.
void restore_backends(std::string_view active_name, std::string_view scoped_name) noexcept;
// Sets `active` only (set_attention_backend).
void set_active(const Backend& backend);

}  // namespace kernelhub::attention::detail
