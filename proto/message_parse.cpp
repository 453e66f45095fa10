// parse_message: frame JSON -> typed Message, strictly (see messages.hpp).
#include <array>
#include <utility>

#include "json_fields.hpp"
#include "kernelhub/proto/messages.hpp"
#include "maintenance_messages.hpp"

namespace kernelhub::proto {
namespace {

using detail::Fields;

constexpr std::size_t kMaxPlatformToken = 64;

Result<Message> parse_hello(const Fields& f) {
  Hello m;
  KH_TRY_ASSIGN(auto protocol, f.int64("protocol"));
  if (protocol < 0 || protocol > 1'000'000) return f.invalid("protocol", "a protocol version");
  m.protocol = static_cast<int>(protocol);
  KH_TRY_ASSIGN(auto caps, f.strings("capabilities"));
  m.capabilities = std::move(caps);
  KH_TRY_ASSIGN(auto client, f.optional_string("client"));
  KH_TRY_ASSIGN(auto daemon, f.optional_string("daemon"));
  m.client = std::move(client);
  m.daemon = std::move(daemon);
  return Message{std::move(m)};
}

// A platform token (torch version, backend, arch, os): short, and only [0-9A-Za-z._+-].
Result<std::optional<std::string>> platform_token(const Fields& f, const char* key) {
  KH_TRY_ASSIGN(auto value, f.optional_string(key));
  if (!value) return value;
  const bool ok = !value->empty() && value->size() <= kMaxPlatformToken &&
                  value->find_first_not_of(
                      "0123456789abcdefghijklmnopqrstuvwxyz"
                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ._+-") == std::string::npos;
  if (!ok) return f.invalid(key, "a platform token of at most 64 characters [0-9A-Za-z._+-]");
  return value;
}

Result<Message> parse_fetch(const Fields& f, bool prefetch) {
  FetchRequest m;
  m.prefetch = prefetch;
  KH_TRY_ASSIGN(auto id, f.uint("id"));
  KH_TRY_ASSIGN(auto repo, f.string("repo"));
  KH_TRY_ASSIGN(auto version, f.optional_uint("version"));
  KH_TRY_ASSIGN(auto revision, f.optional_string("revision"));
  // The frame's shape; what the values must be is the fetch vocabulary's (from_wire).
  if (version.has_value() == revision.has_value())
    return fail(ErrorCode::invalid_request,
                "'fetch' frame: exactly one of 'version' and 'revision' is required");
  KH_TRY_ASSIGN(auto variant, f.optional_string("variant"));
  KH_TRY_ASSIGN(auto all_variants, f.boolean("all_variants", false));
  KH_TRY_ASSIGN(auto torch_version, platform_token(f, "torch_version"));
  KH_TRY_ASSIGN(auto backend, platform_token(f, "backend"));
  KH_TRY_ASSIGN(auto arch, platform_token(f, "arch"));
  KH_TRY_ASSIGN(auto os, platform_token(f, "os"));
  KH_TRY_ASSIGN(auto cxx11_abi, f.optional_boolean("cxx11_abi"));
  KH_TRY_ASSIGN(auto env, f.string_map("env"));
  KH_TRY_ASSIGN(auto locked, f.optional_string_map("locked"));
  m.id = id;
  m.repo = std::move(repo);
  m.version = version;
  m.revision = std::move(revision);
  m.variant = std::move(variant);
  m.all_variants = all_variants;
  m.torch_version = std::move(torch_version);
  m.backend = std::move(backend);
  m.cxx11_abi = cxx11_abi;
  m.arch = std::move(arch);
  m.os = std::move(os);
  m.env = std::move(env);
  m.locked = std::move(locked);
  return Message{std::move(m)};
}

Result<Message> parse_progress(const Fields& f) {
  Progress m;
  KH_TRY_ASSIGN(auto id, f.uint("id"));
  KH_TRY_ASSIGN(auto file, f.string("file"));
  KH_TRY_ASSIGN(auto bytes_done, f.uint("bytes_done"));
  KH_TRY_ASSIGN(auto bytes_total, f.uint("bytes_total"));
  KH_TRY_ASSIGN(auto files_done, f.uint("files_done"));
  KH_TRY_ASSIGN(auto files_total, f.uint("files_total"));
  m = Progress{id, std::move(file), bytes_done, bytes_total, files_done, files_total};
  return Message{std::move(m)};
}

// One of fetched.files; its "fd", when present, must be its position (files[i]'s descriptor
// is the frame's fd i), so a frame's files either all have one or none has.
Result<fetch::ManifestFile> parse_fetched_file(const nlohmann::json& item, std::size_t position,
                                               bool& with_fd) {
  if (!item.is_object())
    return fail(ErrorCode::invalid_request, "'fetched' frame: each of 'files' must be an object");
  Fields f(item, "fetched.files[]");
  KH_TRY_ASSIGN(auto path, f.string("path"));
  KH_TRY_ASSIGN(auto size, f.uint("size"));
  KH_TRY_ASSIGN(auto sha256, f.string("sha256"));
  KH_TRY_ASSIGN(auto fd, f.optional_uint("fd"));
  if (fd && *fd != position) return f.invalid("fd", "the file's position in 'files'");
  if (position > 0 && fd.has_value() != with_fd) {
    return f.invalid("fd", "present on every file or on none");
  }
  with_fd = fd.has_value();
  return fetch::ManifestFile{std::move(path), size, std::move(sha256), {}};
}

// A note of the manifest: absent, or a non-empty string (to_json leaves empty notes out).
Result<std::string> fetched_note(const Fields& f, const char* key) {
  KH_TRY_ASSIGN(auto note, f.optional_string(key));
  if (note && note->empty()) return f.invalid(key, "a non-empty string");
  return note.value_or("");
}

Result<Message> parse_fetched(const Fields& f) {
  KH_TRY_ASSIGN(auto id, f.uint("id"));
  KH_TRY_ASSIGN(auto repo_text, f.string("repo"));
  auto repo = trust::RepoId::parse(repo_text);
  if (!repo) return f.invalid("repo", "a repo id (org/name)");
  KH_TRY_ASSIGN(auto commit, f.string("commit"));
  KH_TRY_ASSIGN(auto variants, f.strings("variants"));
  KH_TRY_ASSIGN(auto from_cache, f.boolean("from_cache"));
  KH_TRY_ASSIGN(auto snapshot_path, f.string("snapshot_path"));
  KH_TRY_ASSIGN(auto files, f.array("files"));
  KH_TRY_ASSIGN(auto cache_fallback, fetched_note(f, "cache_fallback"));
  KH_TRY_ASSIGN(auto refused_move, fetched_note(f, "refused_move"));
  KH_TRY_ASSIGN(auto signature_warnings, f.optional_strings("signature_warnings"));
  Fetched m;
  m.id = id;
  fetch::Manifest& manifest = m.manifest;
  for (const auto& item : *files) {
    KH_TRY_ASSIGN(auto file, parse_fetched_file(item, manifest.files.size(), m.with_fds));
    manifest.files.push_back(std::move(file));
  }
  manifest.repo = std::move(*repo);
  manifest.commit = std::move(commit);
  manifest.variants = std::move(variants);
  manifest.from_cache = from_cache;
  manifest.snapshot_path = std::move(snapshot_path);
  manifest.cache_fallback = std::move(cache_fallback);
  manifest.refused_move = std::move(refused_move);
  manifest.signature_warnings = std::move(signature_warnings);
  return Message{std::move(m)};
}

// {"code_name": count, ...}: bounded, names in the error-code alphabet (they become
// Prometheus label values).
Result<std::map<std::string, std::uint64_t>> parse_error_classes(const nlohmann::json& counters) {
  std::map<std::string, std::uint64_t> out;
  const auto it = counters.find("errors_by_class");
  if (it == counters.end() || it->is_null()) return out;
  const auto bad = [](const char* why) {
    return fail(ErrorCode::invalid_request, std::string("status.counters.errors_by_class: ") + why);
  };
  if (!it->is_object()) return bad("expected an object");
  if (it->size() > kMaxErrorClasses) return bad("too many classes");
  for (const auto& [name, count] : it->items()) {
    const bool name_ok = !name.empty() && name.size() <= 64 &&
                         name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos;
    if (!name_ok) return bad("a class name is not an error code name");
    auto n = detail::as_uint(count);
    if (!n) return bad("counts must be non-negative integers");
    out.emplace(name, *n);
  }
  return out;
}

// kFlightSecondsBounds.size() + 1 counts, or none.
Result<std::vector<std::uint64_t>> parse_flight_buckets(const nlohmann::json& counters) {
  std::vector<std::uint64_t> out;
  const auto it = counters.find("flight_seconds_buckets");
  if (it == counters.end() || it->is_null()) return out;
  if (!it->is_array() || (!it->empty() && it->size() != kFlightSecondsBounds.size() + 1)) {
    return fail(ErrorCode::invalid_request, "status.counters.flight_seconds_buckets: expected " +
                                                std::to_string(kFlightSecondsBounds.size() + 1) +
                                                " counts");
  }
  for (const auto& count : *it) {
    auto n = detail::as_uint(count);
    if (!n) {
      return fail(ErrorCode::invalid_request,
                  "status.counters.flight_seconds_buckets: counts must be non-negative integers");
    }
    out.push_back(*n);
  }
  return out;
}

Result<Counters> parse_counters(const nlohmann::json& value) {
  Fields f(value, "status.counters");
  Counters c;
  std::pair<const char*, std::uint64_t*> members[] = {
      {"requests", &c.requests},
      {"hits", &c.hits},
      {"misses", &c.misses},
      {"bytes_downloaded", &c.bytes_downloaded},
      {"upstream_requests", &c.upstream_requests},
      {"errors", &c.errors},
      {"connections", &c.connections},
      {"active_connections", &c.active_connections}};
  for (auto [key, target] : members) {
    KH_TRY_ASSIGN(auto n, f.uint(key));
    *target = n;
  }
  KH_TRY_ASSIGN(auto rollbacks, f.optional_uint("rollbacks_refused"));
  c.rollbacks_refused = rollbacks.value_or(0);
  KH_TRY_ASSIGN(auto signatures_refused, f.optional_uint("signatures_refused"));
  c.signatures_refused = signatures_refused.value_or(0);
  KH_TRY_ASSIGN(auto signatures_warned, f.optional_uint("signatures_warned"));
  c.signatures_warned = signatures_warned.value_or(0);
  const std::array<std::pair<const char*, std::uint64_t*>, 9> optional_members{
      {{"trust_refused", &c.trust_refused},
       {"http_requests", &c.http_requests},
       {"flights", &c.flights},
       {"flights_active", &c.flights_active},
       {"evictions", &c.evictions},
       {"evicted_bytes", &c.evicted_bytes},
       {"cache_bytes", &c.cache_bytes},
       {"cache_free_bytes", &c.cache_free_bytes},
       {"cache_pinned_bytes", &c.cache_pinned_bytes}}};
  for (auto [key, target] : optional_members) {
    KH_TRY_ASSIGN(auto n, f.optional_uint(key));
    *target = n.value_or(0);
  }
  KH_TRY_ASSIGN(auto classes, parse_error_classes(value));
  c.errors_by_class = std::move(classes);
  KH_TRY_ASSIGN(auto buckets, parse_flight_buckets(value));
  c.flight_seconds_buckets = std::move(buckets);
  if (const auto it = value.find("flight_seconds_sum"); it != value.end()) {
    KH_TRY_ASSIGN(auto sum, f.number("flight_seconds_sum"));
    if (!(sum >= 0)) return f.invalid("flight_seconds_sum", "a non-negative number");
    c.flight_seconds_sum = sum;
  }
  return c;
}

Result<Message> parse_status_reply(const Fields& f) {
  StatusReply m;
  KH_TRY_ASSIGN(auto id, f.uint("id"));
  KH_TRY_ASSIGN(auto daemon, f.string("daemon"));
  KH_TRY_ASSIGN(auto pid, f.int64("pid"));
  KH_TRY_ASSIGN(auto uptime, f.number("uptime_s"));
  KH_TRY_ASSIGN(auto cache_root, f.string("cache_root"));
  KH_TRY_ASSIGN(auto protocol, f.int64("protocol"));
  if (protocol < 0 || protocol > 1'000'000) return f.invalid("protocol", "a protocol version");
  KH_TRY_ASSIGN(auto counters_json, f.object("counters"));
  KH_TRY_ASSIGN(auto counters, parse_counters(*counters_json));
  m = StatusReply{id,      std::move(daemon),     pid,
                  uptime,  std::move(cache_root), static_cast<int>(protocol),
                  counters};
  return Message{std::move(m)};
}

Result<Message> parse_ls_reply(const Fields& f) {
  KH_TRY_ASSIGN(auto id, f.uint("id"));
  KH_TRY_ASSIGN(auto repos, f.array("repos"));
  return Message{LsReply{id, *repos}};
}

Result<Message> parse_verify_request(const Fields& f) {
  KH_TRY_ASSIGN(auto id, f.uint("id"));
  KH_TRY_ASSIGN(auto repo, f.optional_string("repo"));
  return Message{VerifyRequest{id, std::move(repo)}};
}

Result<Message> parse_verify_reply(const Fields& f) {
  VerifyReply m;
  KH_TRY_ASSIGN(auto id, f.uint("id"));
  KH_TRY_ASSIGN(auto checked, f.uint("checked"));
  KH_TRY_ASSIGN(auto corrupt, f.array("corrupt"));
  for (const auto& item : *corrupt) {
    if (!item.is_object()) return f.invalid("corrupt", "an array of objects");
    Fields c(item, "verified.corrupt[]");
    KH_TRY_ASSIGN(auto repo, c.string("repo"));
    KH_TRY_ASSIGN(auto blob, c.string("blob"));
    KH_TRY_ASSIGN(auto reason, c.string("reason"));
    m.corrupt.push_back(CorruptBlob{std::move(repo), std::move(blob), std::move(reason)});
  }
  KH_TRY_ASSIGN(auto receipts_checked, f.optional_uint("receipts_checked"));
  KH_TRY_ASSIGN(auto receipts_changed, f.optional_strings("receipts_changed"));
  m.id = id;
  m.checked = checked;
  m.receipts_checked = receipts_checked.value_or(0);
  m.receipts_changed = std::move(receipts_changed);
  return Message{std::move(m)};
}

Result<Message> parse_import_request(const Fields& f) {
  KH_TRY_ASSIGN(auto id, f.uint("id"));
  KH_TRY_ASSIGN(auto fd, f.uint("fd"));
  KH_TRY_ASSIGN(auto env, f.string_map("env"));
  if (fd >= 250) return f.invalid("fd", "an fd index below 250");
  return Message{ImportRequest{id, static_cast<std::size_t>(fd), std::move(env)}};
}

Result<Message> parse_import_reply(const Fields& f) {
  KH_TRY_ASSIGN(auto id, f.uint("id"));
  KH_TRY_ASSIGN(auto repos, f.array("repos"));
  return Message{ImportReply{id, *repos}};
}

Result<Message> parse_error(const Fields& f, const nlohmann::json& frame) {
  ErrorReply m;
  if (frame.contains("id")) {
    KH_TRY_ASSIGN(auto id, f.optional_uint("id"));
    m.id = id;
  }
  KH_TRY_ASSIGN(auto code, f.string("code"));
  KH_TRY_ASSIGN(auto message, f.string("message"));
  m.code = std::move(code);
  m.message = std::move(message);
  return Message{std::move(m)};
}

template <class Request>
Result<Message> parse_id_only(const Fields& f) {
  KH_TRY_ASSIGN(auto id, f.uint("id"));
  return Message{Request{id}};
}

Result<Message> unknown(const std::string& type, Sender sender) {
  return fail(ErrorCode::unknown_request,
              "unknown " + std::string(sender == Sender::client ? "request" : "reply") + " type '" +
                  type + "'");
}

}  // namespace

std::optional<RequestId> request_id_of(const nlohmann::json& frame) {
  if (!frame.is_object()) return std::nullopt;
  auto it = frame.find("id");
  return it == frame.end() ? std::nullopt : detail::as_uint(*it);
}

Result<Message> parse_message(const nlohmann::json& frame, Sender sender) {
  if (!frame.is_object() || !frame.contains("type") || !frame["type"].is_string())
    return fail(ErrorCode::malformed_frame, "frame is not an object with a string 'type'");
  const std::string type = frame["type"].get<std::string>();
  Fields f(frame, type);
  auto result = [&]() -> Result<Message> {
    if (type == "hello") return parse_hello(f);
    if (sender == Sender::client) {
      if (type == "fetch" || type == "prefetch") return parse_fetch(f, type == "prefetch");
      if (type == "status") return parse_id_only<StatusRequest>(f);
      if (type == "ls") return parse_id_only<LsRequest>(f);
      if (type == "verify") return parse_verify_request(f);
      if (type == "gc") return detail::parse_gc_request(f);
      if (type == "import") return parse_import_request(f);
      if (type == "pin") return detail::parse_pin_request(f);
      return unknown(type, sender);
    }
    if (type == "progress") return parse_progress(f);
    if (type == "fetched") return parse_fetched(f);
    if (type == "status") return parse_status_reply(f);
    if (type == "ls") return parse_ls_reply(f);
    if (type == "verified") return parse_verify_reply(f);
    if (type == "gc") return detail::parse_gc_reply(f);
    if (type == "imported") return parse_import_reply(f);
    if (type == "pins") return detail::parse_pin_reply(f);
    if (type == "error") return parse_error(f, frame);
    return unknown(type, sender);
  }();
  if (!result) {
    // Name the request in the message so the reply can be matched up by a human, too.
    if (auto id = request_id_of(frame)) {
      Error error = std::move(result).error();
      error.message += " (id " + std::to_string(*id) + ")";
      return fail(std::move(error));
    }
  }
  return result;
}

Result<Message> parse_message(const nlohmann::json& frame) {
  if (frame.is_object()) {
    auto type = frame.find("type");
    if (type != frame.end() && type->is_string()) {
      const auto& t = type->get_ref<const std::string&>();
      const bool reply = t == "progress" || t == "fetched" || t == "verified" || t == "error" ||
                         t == "imported" || t == "pins" ||
                         (t == "status" && frame.contains("counters")) ||
                         (t == "ls" && frame.contains("repos")) ||
                         (t == "gc" && frame.contains("removed_snapshots"));
      return parse_message(frame, reply ? Sender::daemon : Sender::client);
    }
  }
  return parse_message(frame, Sender::client);
}

}  // namespace kernelhub::proto
