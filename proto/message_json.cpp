// to_json for every message: the canonical form (absent optionals omitted).
#include "kernelhub/proto/messages.hpp"

namespace kernelhub::proto {
namespace {

using nlohmann::json;

template <class T>
void put_optional(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

}  // namespace

json to_json(const Hello& m) {
  json j{{"type", "hello"}, {"protocol", m.protocol}, {"capabilities", m.capabilities}};
  put_optional(j, "client", m.client);
  put_optional(j, "daemon", m.daemon);
  return j;
}

json to_json(const FetchRequest& m) {
  json j{{"type", m.prefetch ? "prefetch" : "fetch"}, {"id", m.id}, {"repo", m.repo}};
  put_optional(j, "version", m.version);
  put_optional(j, "revision", m.revision);
  put_optional(j, "variant", m.variant);
  j["all_variants"] = m.all_variants;
  put_optional(j, "torch_version", m.torch_version);
  put_optional(j, "backend", m.backend);
  put_optional(j, "cxx11_abi", m.cxx11_abi);
  put_optional(j, "arch", m.arch);
  put_optional(j, "os", m.os);
  j["env"] = json::object();
  for (const auto& [key, value] : m.env) j["env"][key] = value;
  if (m.locked) {
    j["locked"] = json::object();
    for (const auto& [variant, hash] : *m.locked) j["locked"][variant] = hash;
  }
  return j;
}

json to_json(const Progress& m) {
  return json{{"type", "progress"},
              {"id", m.id},
              {"file", m.file},
              {"bytes_done", m.bytes_done},
              {"bytes_total", m.bytes_total},
              {"files_done", m.files_done},
              {"files_total", m.files_total}};
}

json to_json(const Fetched& m) {
  const fetch::Manifest& manifest = m.manifest;
  json files = json::array();
  for (std::size_t i = 0; i < manifest.files.size(); ++i) {
    const auto& file = manifest.files[i];
    json entry{{"path", file.path}, {"size", file.size}, {"sha256", file.sha256}};
    if (m.with_fds) entry["fd"] = i;
    files.push_back(std::move(entry));
  }
  json j{{"type", "fetched"},
         {"id", m.id},
         {"repo", manifest.repo.str()},
         {"commit", manifest.commit},
         {"variants", manifest.variants},
         {"from_cache", manifest.from_cache},
         {"snapshot_path", manifest.snapshot_path.string()},
         {"files", std::move(files)}};
  if (!manifest.cache_fallback.empty()) j["cache_fallback"] = manifest.cache_fallback;
  if (!manifest.refused_move.empty()) j["refused_move"] = manifest.refused_move;
  if (!manifest.signature_warnings.empty()) j["signature_warnings"] = manifest.signature_warnings;
  return j;
}

json to_json(const StatusRequest& m) { return json{{"type", "status"}, {"id", m.id}}; }

json to_json(const Counters& c) {
  return json{{"requests", c.requests},
              {"hits", c.hits},
              {"misses", c.misses},
              {"bytes_downloaded", c.bytes_downloaded},
              {"upstream_requests", c.upstream_requests},
              {"errors", c.errors},
              {"connections", c.connections},
              {"active_connections", c.active_connections},
              {"rollbacks_refused", c.rollbacks_refused},
              {"signatures_refused", c.signatures_refused},
              {"signatures_warned", c.signatures_warned},
              {"trust_refused", c.trust_refused},
              {"http_requests", c.http_requests},
              {"flights", c.flights},
              {"flights_active", c.flights_active},
              {"errors_by_class", c.errors_by_class},
              {"flight_seconds_buckets", c.flight_seconds_buckets},
              {"flight_seconds_sum", c.flight_seconds_sum},
              {"evictions", c.evictions},
              {"evicted_bytes", c.evicted_bytes},
              {"cache_bytes", c.cache_bytes},
              {"cache_free_bytes", c.cache_free_bytes},
              {"cache_pinned_bytes", c.cache_pinned_bytes}};
}

json to_json(const StatusReply& m) {
  return json{{"type", "status"},       {"id", m.id},
              {"daemon", m.daemon},     {"pid", m.pid},
              {"uptime_s", m.uptime_s}, {"cache_root", m.cache_root},
              {"protocol", m.protocol}, {"counters", to_json(m.counters)}};
}

json to_json(const LsRequest& m) { return json{{"type", "ls"}, {"id", m.id}}; }

json to_json(const LsReply& m) { return json{{"type", "ls"}, {"id", m.id}, {"repos", m.repos}}; }

json to_json(const VerifyRequest& m) {
  json j{{"type", "verify"}, {"id", m.id}};
  put_optional(j, "repo", m.repo);
  return j;
}

json to_json(const VerifyReply& m) {
  json corrupt = json::array();
  for (const auto& c : m.corrupt)
    corrupt.push_back({{"repo", c.repo}, {"blob", c.blob}, {"reason", c.reason}});
  return json{{"type", "verified"},
              {"id", m.id},
              {"checked", m.checked},
              {"corrupt", std::move(corrupt)},
              {"receipts_checked", m.receipts_checked},
              {"receipts_changed", m.receipts_changed}};
}

json to_json(const ImportRequest& m) {
  json j{{"type", "import"}, {"id", m.id}, {"fd", m.fd}, {"env", json::object()}};
  for (const auto& [key, value] : m.env) j["env"][key] = value;
  return j;
}

json to_json(const ImportReply& m) {
  return json{{"type", "imported"}, {"id", m.id}, {"repos", m.repos}};
}

json to_json(const ErrorReply& m) {
  json j{{"type", "error"}};
  put_optional(j, "id", m.id);
  j["code"] = m.code;
  j["message"] = m.message;
  return j;
}

json to_json(const Message& m) {
  return std::visit([](const auto& message) { return to_json(message); }, m);
}

std::string_view type_name(const Message& m) {
  struct Namer {
    std::string_view operator()(const Hello&) const { return "hello"; }
    std::string_view operator()(const FetchRequest& r) const {
      return r.prefetch ? "prefetch" : "fetch";
    }
    std::string_view operator()(const Progress&) const { return "progress"; }
    std::string_view operator()(const Fetched&) const { return "fetched"; }
    std::string_view operator()(const StatusRequest&) const { return "status"; }
    std::string_view operator()(const StatusReply&) const { return "status"; }
    std::string_view operator()(const LsRequest&) const { return "ls"; }
    std::string_view operator()(const LsReply&) const { return "ls"; }
    std::string_view operator()(const VerifyRequest&) const { return "verify"; }
    std::string_view operator()(const VerifyReply&) const { return "verified"; }
    std::string_view operator()(const GcRequest&) const { return "gc"; }
    std::string_view operator()(const GcReply&) const { return "gc"; }
    std::string_view operator()(const ImportRequest&) const { return "import"; }
    std::string_view operator()(const ImportReply&) const { return "imported"; }
    std::string_view operator()(const PinRequest&) const { return "pin"; }
    std::string_view operator()(const PinReply&) const { return "pins"; }
    std::string_view operator()(const ErrorReply&) const { return "error"; }
  };
  return std::visit(Namer{}, m);
}

}  // namespace kernelhub::proto
