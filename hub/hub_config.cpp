#include "kernelhub/hub/hub_config.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include "kernelhub/util/read_file.hpp"

namespace kernelhub::hub {
namespace {

// Seconds as written by users ("10", "2.5"); nullopt when unparsable or not positive.
std::optional<std::chrono::milliseconds> parse_seconds(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  try {
    std::size_t used = 0;
    const double seconds = std::stod(*text, &used);
    if (used != text->size() || !std::isfinite(seconds) || seconds <= 0) return std::nullopt;
    return std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000.0)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A non-negative whole number ("1024"); nullopt when unparsable.
std::optional<long long> parse_count(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  long long value = 0;
  const auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || ptr != text->data() + text->size() || value < 0) return std::nullopt;
  return value;
}

// The first CA bundle variable set to a non-empty value; an empty value never means "do not
// verify" here.
std::optional<std::string> first_set(const util::Environment& env,
                                     std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto value = env.get(name); value && !value->empty()) return value;
  }
  return std::nullopt;
}

std::string trim(std::string text) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  text.erase(text.begin(), std::find_if(text.begin(), text.end(), not_space));
  text.erase(std::find_if(text.rbegin(), text.rend(), not_space).base(), text.end());
  return text;
}

std::optional<std::string> read_token_file(const std::filesystem::path& path) {
  auto text = util::read_small_file(path, 64u << 10);  // a token is ~40 bytes
  if (!text) return std::nullopt;
  std::string token = trim(std::move(*text));
  if (token.empty()) return std::nullopt;
  return token;
}

// huggingface_hub order: HF_TOKEN, HUGGING_FACE_HUB_TOKEN, then the token file
// ($HF_TOKEN_PATH, else $HF_HOME/token, else ~/.cache/huggingface/token). Paths expand ~ and
// $VAR as Python does. A blank value (empty or whitespace only) is no token: it is skipped,
// so no "Authorization: Bearer " with nothing after it is ever sent.
std::optional<std::string> resolve_token(const util::Environment& env) {
  if (env.is_true("HF_HUB_DISABLE_IMPLICIT_TOKEN")) return std::nullopt;
  for (const char* var : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
    if (auto token = env.get(var); token && !trim(*token).empty()) return trim(*token);
  }
  const auto expand = [&env](const std::string& value) -> std::filesystem::path {
    return util::expand_path(value, env);
  };
  std::filesystem::path file;
  if (auto path = env.get("HF_TOKEN_PATH")) {
    file = expand(*path);
  } else if (auto home = env.get("HF_HOME")) {
    file = expand(*home) / "token";
  } else if (auto xdg = env.get("XDG_CACHE_HOME")) {
    file = expand(*xdg) / "huggingface" / "token";
  } else if (env.get("HOME")) {  // no HOME: no implicit token file (hermetic services)
    file = expand("~") / ".cache" / "huggingface" / "token";
  } else {
    return std::nullopt;
  }
  return read_token_file(file);
}

}  // namespace

HubConfig HubConfig::from(const util::Environment& env) {
  HubConfig config;
  if (auto endpoint = env.get("HF_ENDPOINT")) {
    std::string value = *endpoint;
    while (!value.empty() && value.back() == '/') value.pop_back();
    if (!value.empty()) config.endpoint = value;
  }
  config.token = resolve_token(env);
  if (auto t = parse_seconds(env.get("HF_HUB_ETAG_TIMEOUT"))) config.etag_timeout = *t;
  if (auto t = parse_seconds(env.get("HF_HUB_DOWNLOAD_TIMEOUT"))) config.download_timeout = *t;
  config.offline = env.is_true("HF_HUB_OFFLINE") || env.is_true("TRANSFORMERS_OFFLINE");
  if (auto base = env.get("KERNELHUB_RETRY_BASE_MS")) {
    long long ms = 0;
    const auto [ptr, ec] = std::from_chars(base->data(), base->data() + base->size(), ms);
    if (ec == std::errc() && ptr == base->data() + base->size() && ms >= 0) {
      config.retry_base = std::chrono::milliseconds(ms);
    }
  }
  if (auto n = parse_count(env.get("KERNELHUB_MIN_BYTES_PER_SECOND")))
    config.min_bytes_per_second = static_cast<std::uint64_t>(*n);
  if (auto t = parse_seconds(env.get("KERNELHUB_MIN_SPEED_WINDOW"))) config.min_speed_window = *t;
  if (auto t = parse_seconds(env.get("KERNELHUB_API_DEADLINE"))) config.api_deadline = *t;
  if (auto t = parse_seconds(env.get("KERNELHUB_DOWNLOAD_DEADLINE"))) config.download_deadline = *t;
  constexpr long long kMaxWait = 24LL * 3600;
  if (auto n = parse_count(env.get("KERNELHUB_MAX_RETRY_WAIT")))
    config.max_retry_wait = static_cast<int>(std::min(*n, kMaxWait));
  if (auto n = parse_count(env.get("KERNELHUB_MAX_RETRY_WAIT_TOTAL")))
    config.max_retry_wait_total = static_cast<int>(std::min(*n, kMaxWait));
  // huggingface_hub >= 1 (httpx) reads SSL_CERT_FILE; older ones (requests) read
  // REQUESTS_CA_BUNDLE, then CURL_CA_BUNDLE.
  config.ca_file = first_set(env, {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"});
  config.ca_dir = first_set(env, {"SSL_CERT_DIR"});
  return config;
}

std::chrono::milliseconds HubConfig::backoff(int attempt) const {
  const int exponent = std::clamp(attempt, 0, 3);  // 1, 2, 4, 8, then capped at 8
  return retry_base * (1 << exponent);
}

std::chrono::milliseconds HubConfig::file_deadline(std::uint64_t size) const {
  if (min_bytes_per_second == 0) return download_deadline;
  // Milliseconds the file takes at exactly the floor; saturates instead of overflowing.
  const double at_floor =
      static_cast<double>(size) * 1000.0 / static_cast<double>(min_bytes_per_second);
  const double total = static_cast<double>(download_deadline.count()) + at_floor;
  constexpr double kMax = 1e15;  // ~31,000 years: never reached, never overflows
  return std::chrono::milliseconds(static_cast<long long>(std::min(total, kMax)));
}

}  // namespace kernelhub::hub
