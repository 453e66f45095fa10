// Internal to the policy reader: the parsers of its tables, one file each, over toml++.
#pragma once

#include <string>

#include <toml++/toml.h>

#include "kernelhub/trust/cache_settings.hpp"
#include "kernelhub/trust/signature_settings.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust {

// [signatures] and its [signatures.publishers.<org>] tables.
Result<void> parse_signatures_table(const toml::table& table, const std::string& source,
                                    SignatureSettings& settings);
// [cache]: the shared cache's bounds.
Result<void> parse_cache_table(const toml::table& table, const std::string& source,
                               CacheSettings& settings);

}  // namespace kernelhub::trust
