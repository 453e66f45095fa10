#include "kernelhub/variant/variant_name.hpp"

#include <array>
#include <charconv>
#include <regex>
#include <vector>

namespace kernelhub::variant {
namespace {

std::vector<std::string> split_dashes(std::string_view text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto dash = text.find('-', start);
    parts.emplace_back(text.substr(start, dash == std::string_view::npos ? dash : dash - start));
    if (dash == std::string_view::npos) return parts;
    start = dash + 1;
  }
}

std::string join_dashes(const std::vector<std::string>& parts, std::size_t from, std::size_t to) {
  std::string out;
  for (std::size_t i = from; i < to && i < parts.size(); ++i) {
    if (i > from) out += '-';
    out += parts[i];
  }
  return out;
}

std::optional<int> to_int(const std::string& digits) {
  int value = 0;
  const auto* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

// Matches `pattern` (two capture groups: major, minor) against the whole of `text`.
std::optional<std::pair<int, int>> match_version(const std::regex& pattern,
                                                 const std::string& text) {
  std::smatch m;
  if (!std::regex_match(text, m, pattern)) return std::nullopt;
  const auto major = to_int(m[1].str());
  const auto minor = to_int(m[2].str());
  if (!major || !minor) return std::nullopt;
  return std::pair{*major, *minor};
}

// `{backend}-{cpu}-{os}`: exactly three fields.
bool parse_arch(const std::vector<std::string>& parts, std::size_t from, ParsedVariant& out) {
  if (parts.size() != from + 3) return false;
  auto backend = parse_backend_token(parts[from]);
  if (!backend) return false;
  out.backend = std::move(*backend);
  out.cpu = parts[from + 1];
  out.os = parts[from + 2];
  return true;
}

}  // namespace

std::optional<BackendToken> parse_backend_token(std::string_view token) {
  static constexpr std::array<std::string_view, 4> kPlain{"cpu", "metal", "neuron", "tpu"};
  for (const auto plain : kPlain) {
    if (token == plain) return BackendToken{std::string(plain), std::string(token), false, 0, 0};
  }
  // Greedy first group: the minor is always the last digit ("cu132" is 13.2, "xpu20253" 2025.3).
  struct Versioned {
    std::string_view prefix;
    std::string_view family;
    std::regex pattern;
  };
  static const std::array<Versioned, 4> kVersioned{{
      {"cu", "cuda", std::regex(R"(cu(\d+)(\d))")},
      {"rocm", "rocm", std::regex(R"(rocm(\d+)(\d))")},
      {"xpu", "xpu", std::regex(R"(xpu(\d+)(\d))")},
      {"cann", "cann", std::regex(R"(cann(\d+)(\d))")},
  }};
  const std::string text(token);
  for (const auto& v : kVersioned) {
    if (!token.starts_with(v.prefix)) continue;
    const auto version = match_version(v.pattern, text);
    if (!version) return std::nullopt;
    return BackendToken{std::string(v.family), text, true, version->first, version->second};
  }
  return std::nullopt;
}

std::string noarch_name(const BackendToken& backend) {
  return backend.family == "cann" ? "npu" : backend.family;
}

std::optional<ParsedVariant> parse_variant_name(std::string_view name) {
  static const std::regex kStableAbi(R"(torch-stable-abi(\d)(\d+))");
  static const std::regex kTorch(R"(torch(\d)(\d+))");
  static const std::regex kTvmFfi(R"(tvm-ffi(\d)(\d+))");

  const auto parts = split_dashes(name);
  ParsedVariant out;
  if (name.starts_with("torch-stable-abi")) {
    const auto version = match_version(kStableAbi, join_dashes(parts, 0, 3));
    if (!version || !parse_arch(parts, 3, out)) return std::nullopt;
    out.framework = Framework::torch_stable_abi;
    std::tie(out.major, out.minor) = *version;
    return out;
  }
  if (parts[0] == "torch") {
    out.framework = Framework::noarch;
    out.noarch_backend = join_dashes(parts, 1, parts.size());
    if (out.noarch_backend.empty()) return std::nullopt;
    return out;
  }
  if (parts[0].starts_with("torch")) {
    std::size_t arch_from = 1;
    if (parts.size() >= 2 && (parts[1] == "cxx11" || parts[1] == "cxx98")) {
      out.cxx11_abi = parts[1] == "cxx11";
      arch_from = 2;
    }
    const auto version = match_version(kTorch, parts[0]);
    if (!version || !parse_arch(parts, arch_from, out)) return std::nullopt;
    out.framework = Framework::torch;
    std::tie(out.major, out.minor) = *version;
    return out;
  }
  if (parts[0] == "tvm" && parts.size() >= 2 && parts[1].starts_with("ffi")) {
    const auto version = match_version(kTvmFfi, "tvm-" + parts[1]);
    if (!version || !parse_arch(parts, 2, out)) return std::nullopt;
    out.framework = Framework::tvm_ffi;
    std::tie(out.major, out.minor) = *version;
    return out;
  }
  return std::nullopt;
}

}  // namespace kernelhub::variant
