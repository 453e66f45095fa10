// parse_message: frame JSON -> typed Message, strictly (see messages.hpp).
#include <array>
#include <utility>

#include "json_fields.hpp"
#include "kernelhub/proto/messages.hpp"

// Binds `var` to the value of a Result-returning expression or returns its error.
#define KH_PROTO_GET(var, expr)                                                 \
  auto var##_result = (expr);                                                   \
  if (!var##_result) return ::kernelhub::fail(std::move(var##_result).error()); \
  auto var = std::move(*var##_result)

namespace kernelhub::proto {
namespace {

using detail::Fields;

constexpr std::size_t kMaxPlatformToken = 64;

Result<Message> parse_hello(const Fields& f) {
  Hello m;
  KH_PROTO_GET(protocol, f.int64("protocol"));
  if (protocol < 0 || protocol > 1'000'000) return f.invalid("protocol", "a protocol version");
  m.protocol = static_cast<int>(protocol);
  KH_PROTO_GET(caps, f.strings("capabilities"));
  m.capabilities = std::move(caps);
  KH_PROTO_GET(client, f.optional_string("client"));
  KH_PROTO_GET(daemon, f.optional_string("daemon"));
  m.client = std::move(client);
  m.daemon = std::move(daemon);
  return Message{std::move(m)};
}

// A platform token (torch version, backend, arch, os): short, and only [0-9A-Za-z._+-].
Result<std::optional<std::string>> platform_token(const Fields& f, const char* key) {
  KH_PROTO_GET(value, f.optional_string(key));
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
  KH_PROTO_GET(id, f.uint("id"));
  KH_PROTO_GET(repo, f.string("repo"));
  KH_PROTO_GET(version, f.optional_uint("version"));
  KH_PROTO_GET(revision, f.optional_string("revision"));
  // The frame's shape; what the values must be is the fetch vocabulary's (from_wire).
  if (version.has_value() == revision.has_value())
    return fail(ErrorCode::invalid_request,
                "'fetch' frame: exactly one of 'version' and 'revision' is required");
  KH_PROTO_GET(variant, f.optional_string("variant"));
  KH_PROTO_GET(all_variants, f.boolean("all_variants", false));
  KH_PROTO_GET(torch_version, platform_token(f, "torch_version"));
  KH_PROTO_GET(backend, platform_token(f, "backend"));
  KH_PROTO_GET(arch, platform_token(f, "arch"));
  KH_PROTO_GET(os, platform_token(f, "os"));
  KH_PROTO_GET(cxx11_abi, f.optional_boolean("cxx11_abi"));
  KH_PROTO_GET(env, f.string_map("env"));
  KH_PROTO_GET(locked, f.optional_string_map("locked"));
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
  KH_PROTO_GET(id, f.uint("id"));
  KH_PROTO_GET(file, f.string("file"));
  KH_PROTO_GET(bytes_done, f.uint("bytes_done"));
  KH_PROTO_GET(bytes_total, f.uint("bytes_total"));
  KH_PROTO_GET(files_done, f.uint("files_done"));
  KH_PROTO_GET(files_total, f.uint("files_total"));
  m = Progress{id, std::move(file), bytes_done, bytes_total, files_done, files_total};
  return Message{std::move(m)};
}

Result<FetchedFile> parse_fetched_file(const nlohmann::json& item) {
  if (!item.is_object())
    return fail(ErrorCode::invalid_request, "'fetched' frame: each of 'files' must be an object");
  Fields f(item, "fetched.files[]");
  FetchedFile file;
  KH_PROTO_GET(path, f.string("path"));
  KH_PROTO_GET(size, f.uint("size"));
  KH_PROTO_GET(sha256, f.string("sha256"));
  KH_PROTO_GET(fd, f.optional_uint("fd"));
  if (fd && *fd >= 250) return f.invalid("fd", "an fd index below 250");
  file.path = std::move(path);
  file.size = size;
  file.sha256 = std::move(sha256);
  if (fd) file.fd = static_cast<std::size_t>(*fd);
  return file;
}

Result<Message> parse_fetched(const Fields& f) {
  Fetched m;
  KH_PROTO_GET(id, f.uint("id"));
  KH_PROTO_GET(repo, f.string("repo"));
  KH_PROTO_GET(commit, f.string("commit"));
  KH_PROTO_GET(variants, f.strings("variants"));
  KH_PROTO_GET(from_cache, f.boolean("from_cache"));
  KH_PROTO_GET(snapshot_path, f.string("snapshot_path"));
  KH_PROTO_GET(files, f.array("files"));
  KH_PROTO_GET(cache_fallback, f.optional_string("cache_fallback"));
  KH_PROTO_GET(refused_move, f.optional_string("refused_move"));
  KH_PROTO_GET(signature_warnings, f.optional_strings("signature_warnings"));
  for (const auto& item : *files) {
    KH_PROTO_GET(file, parse_fetched_file(item));
    m.files.push_back(std::move(file));
  }
  m.id = id;
  m.repo = std::move(repo);
  m.commit = std::move(commit);
  m.variants = std::move(variants);
  m.from_cache = from_cache;
  m.snapshot_path = std::move(snapshot_path);
  m.cache_fallback = std::move(cache_fallback);
  m.refused_move = std::move(refused_move);
  m.signature_warnings = std::move(signature_warnings);
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
    KH_PROTO_GET(n, f.uint(key));
    *target = n;
  }
  KH_PROTO_GET(rollbacks, f.optional_uint("rollbacks_refused"));
  c.rollbacks_refused = rollbacks.value_or(0);
  KH_PROTO_GET(signatures_refused, f.optional_uint("signatures_refused"));
  c.signatures_refused = signatures_refused.value_or(0);
  KH_PROTO_GET(signatures_warned, f.optional_uint("signatures_warned"));
  c.signatures_warned = signatures_warned.value_or(0);
  const std::array<std::pair<const char*, std::uint64_t*>, 4> optional_members{
      {{"trust_refused", &c.trust_refused},
       {"http_requests", &c.http_requests},
       {"flights", &c.flights},
       {"flights_active", &c.flights_active}}};
  for (auto [key, target] : optional_members) {
    KH_PROTO_GET(n, f.optional_uint(key));
    *target = n.value_or(0);
  }
  KH_PROTO_GET(classes, parse_error_classes(value));
  c.errors_by_class = std::move(classes);
  KH_PROTO_GET(buckets, parse_flight_buckets(value));
  c.flight_seconds_buckets = std::move(buckets);
  if (const auto it = value.find("flight_seconds_sum"); it != value.end()) {
    KH_PROTO_GET(sum, f.number("flight_seconds_sum"));
    if (!(sum >= 0)) return f.invalid("flight_seconds_sum", "a non-negative number");
    c.flight_seconds_sum = sum;
  }
  return c;
}

Result<Message> parse_status_reply(const Fields& f) {
  StatusReply m;
  KH_PROTO_GET(id, f.uint("id"));
  KH_PROTO_GET(daemon, f.string("daemon"));
  KH_PROTO_GET(pid, f.int64("pid"));
  KH_PROTO_GET(uptime, f.number("uptime_s"));
  KH_PROTO_GET(cache_root, f.string("cache_root"));
  KH_PROTO_GET(protocol, f.int64("protocol"));
  if (protocol < 0 || protocol > 1'000'000) return f.invalid("protocol", "a protocol version");
  KH_PROTO_GET(counters_json, f.object("counters"));
  KH_PROTO_GET(counters, parse_counters(*counters_json));
  m = StatusReply{id,      std::move(daemon),     pid,
                  uptime,  std::move(cache_root), static_cast<int>(protocol),
                  counters};
  return Message{std::move(m)};
}

Result<Message> parse_ls_reply(const Fields& f) {
  KH_PROTO_GET(id, f.uint("id"));
  KH_PROTO_GET(repos, f.array("repos"));
  return Message{LsReply{id, *repos}};
}

Result<Message> parse_verify_request(const Fields& f) {
  KH_PROTO_GET(id, f.uint("id"));
  KH_PROTO_GET(repo, f.optional_string("repo"));
  return Message{VerifyRequest{id, std::move(repo)}};
}

Result<Message> parse_verify_reply(const Fields& f) {
  VerifyReply m;
  KH_PROTO_GET(id, f.uint("id"));
  KH_PROTO_GET(checked, f.uint("checked"));
  KH_PROTO_GET(corrupt, f.array("corrupt"));
  for (const auto& item : *corrupt) {
    if (!item.is_object()) return f.invalid("corrupt", "an array of objects");
    Fields c(item, "verified.corrupt[]");
    KH_PROTO_GET(repo, c.string("repo"));
    KH_PROTO_GET(blob, c.string("blob"));
    KH_PROTO_GET(reason, c.string("reason"));
    m.corrupt.push_back(CorruptBlob{std::move(repo), std::move(blob), std::move(reason)});
  }
  KH_PROTO_GET(receipts_checked, f.optional_uint("receipts_checked"));
  KH_PROTO_GET(receipts_changed, f.optional_strings("receipts_changed"));
  m.id = id;
  m.checked = checked;
  m.receipts_checked = receipts_checked.value_or(0);
  m.receipts_changed = std::move(receipts_changed);
  return Message{std::move(m)};
}

Result<Message> parse_gc_reply(const Fields& f) {
  KH_PROTO_GET(id, f.uint("id"));
  KH_PROTO_GET(snapshots, f.uint("removed_snapshots"));
  KH_PROTO_GET(blobs, f.uint("removed_blobs"));
  KH_PROTO_GET(freed, f.uint("freed_bytes"));
  return Message{GcReply{id, snapshots, blobs, freed}};
}

Result<Message> parse_import_request(const Fields& f) {
  KH_PROTO_GET(id, f.uint("id"));
  KH_PROTO_GET(fd, f.uint("fd"));
  KH_PROTO_GET(env, f.string_map("env"));
  if (fd >= 250) return f.invalid("fd", "an fd index below 250");
  return Message{ImportRequest{id, static_cast<std::size_t>(fd), std::move(env)}};
}

Result<Message> parse_import_reply(const Fields& f) {
  KH_PROTO_GET(id, f.uint("id"));
  KH_PROTO_GET(repos, f.array("repos"));
  return Message{ImportReply{id, *repos}};
}

Result<Message> parse_error(const Fields& f, const nlohmann::json& frame) {
  ErrorReply m;
  if (frame.contains("id")) {
    KH_PROTO_GET(id, f.optional_uint("id"));
    m.id = id;
  }
  KH_PROTO_GET(code, f.string("code"));
  KH_PROTO_GET(message, f.string("message"));
  m.code = std::move(code);
  m.message = std::move(message);
  return Message{std::move(m)};
}

template <class Request>
Result<Message> parse_id_only(const Fields& f) {
  KH_PROTO_GET(id, f.uint("id"));
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
      if (type == "gc") return parse_id_only<GcRequest>(f);
      if (type == "import") return parse_import_request(f);
      return unknown(type, sender);
    }
    if (type == "progress") return parse_progress(f);
    if (type == "fetched") return parse_fetched(f);
    if (type == "status") return parse_status_reply(f);
    if (type == "ls") return parse_ls_reply(f);
    if (type == "verified") return parse_verify_reply(f);
    if (type == "gc") return parse_gc_reply(f);
    if (type == "imported") return parse_import_reply(f);
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
                         t == "imported" || (t == "status" && frame.contains("counters")) ||
                         (t == "ls" && frame.contains("repos")) ||
                         (t == "gc" && frame.contains("removed_snapshots"));
      return parse_message(frame, reply ? Sender::daemon : Sender::client);
    }
  }
  return parse_message(frame, Sender::client);
}

}  // namespace kernelhub::proto
