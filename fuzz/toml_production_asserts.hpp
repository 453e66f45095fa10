// Force-included (-include) into the harnesses that compile toml++ header-only
// (kernel_status_fuzz, policy_fuzz), which the ASan build compiles without NDEBUG.
// toml++ 3.3's parse_table_header calls parse_key without checking for a key character first,
// and parse_key asserts one (TOML_ASSERT_ASSUME): "[\n" trips the assertion. The product links
// Debian's toml++ library, built by gcc with NDEBUG, where that line compiles to nothing and
// parse_key's own check then reports "expected bare key starting character". The harnesses
// parse as that library does: no assertion, and (clang) no __builtin_assume either.
#pragma once
#define TOML_ASSERT(expr) static_cast<void>(0)
