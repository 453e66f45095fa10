// Internal to the policy reader: the parsers of its tables, one file each, over toml++.
#pragma once

#include <string>

#include <toml++/toml.h>

#include "trust/result.hpp"
#include "trust/signature_settings.hpp"

namespace kernelhub::trust {

// [signatures] and its [signatures.publishers.<org>] tables.
Result<void> parse_signatures_table(const toml::table& table, const std::string& source,
                                    SignatureSettings& settings);

}  // namespace kernelhub::trust
