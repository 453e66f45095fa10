#include "maintenance_messages.hpp"

namespace kernelhub::proto {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxPinVariants = 256;
constexpr std::size_t kMaxSkipped = 4096;

template <class T>
void put_optional(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

}  // namespace

json to_json(const GcRequest& m) {
  json j{{"type", "gc"}, {"id", m.id}};
  put_optional(j, "max_size", m.max_size);
  put_optional(j, "min_free_bytes", m.min_free_bytes);
  put_optional(j, "min_free_percent", m.min_free_percent);
  put_optional(j, "max_unused_age_s", m.max_unused_age_s);
  if (m.dry_run) j["dry_run"] = true;
  return j;
}

json to_json(const GcReply& m) {
  return json{{"type", "gc"},
              {"id", m.id},
              {"removed_snapshots", m.removed_snapshots},
              {"removed_blobs", m.removed_blobs},
              {"freed_bytes", m.freed_bytes},
              {"evicted", m.evicted},
              {"cache_bytes", m.cache_bytes},
              {"pinned_bytes", m.pinned_bytes},
              {"free_bytes", m.free_bytes},
              {"skipped", m.skipped},
              {"within_bounds", m.within_bounds},
              {"dry_run", m.dry_run}};
}

json to_json(const PinRequest& m) {
  json j{{"type", "pin"}, {"id", m.id}, {"action", m.action}};
  put_optional(j, "repo", m.repo);
  put_optional(j, "revision", m.revision);
  if (!m.variants.empty()) j["variants"] = m.variants;
  if (!m.source.empty()) j["source"] = m.source;
  return j;
}

json to_json(const PinReply& m) {
  return json{{"type", "pins"}, {"id", m.id}, {"repos", m.repos}, {"removed", m.removed}};
}

namespace detail {

Result<Message> parse_gc_request(const Fields& f) {
  GcRequest m;
  KH_TRY_ASSIGN(m.id, f.uint("id"));
  KH_TRY_ASSIGN(m.max_size, f.optional_uint("max_size"));
  KH_TRY_ASSIGN(m.min_free_bytes, f.optional_uint("min_free_bytes"));
  KH_TRY_ASSIGN(m.max_unused_age_s, f.optional_uint("max_unused_age_s"));
  KH_TRY_ASSIGN(m.dry_run, f.boolean("dry_run", false));
  if (f.has("min_free_percent")) {
    KH_TRY_ASSIGN(auto percent, f.number("min_free_percent"));
    if (!(percent >= 0 && percent < 100))
      return f.invalid("min_free_percent", "a percentage from 0 to below 100");
    m.min_free_percent = percent;
  }
  return Message{m};
}

Result<Message> parse_gc_reply(const Fields& f) {
  GcReply m;
  KH_TRY_ASSIGN(m.id, f.uint("id"));
  KH_TRY_ASSIGN(m.removed_snapshots, f.uint("removed_snapshots"));
  KH_TRY_ASSIGN(m.removed_blobs, f.uint("removed_blobs"));
  KH_TRY_ASSIGN(m.freed_bytes, f.uint("freed_bytes"));
  if (f.has("evicted")) {
    KH_TRY_ASSIGN(const auto* evicted, f.array("evicted"));
    m.evicted = *evicted;
  }
  KH_TRY_ASSIGN(auto cache_bytes, f.optional_uint("cache_bytes"));
  KH_TRY_ASSIGN(auto pinned_bytes, f.optional_uint("pinned_bytes"));
  KH_TRY_ASSIGN(auto free_bytes, f.optional_uint("free_bytes"));
  KH_TRY_ASSIGN(m.skipped, f.optional_strings("skipped"));
  if (m.skipped.size() > kMaxSkipped) return f.invalid("skipped", "at most 4096 entries");
  KH_TRY_ASSIGN(m.within_bounds, f.boolean("within_bounds", true));
  KH_TRY_ASSIGN(m.dry_run, f.boolean("dry_run", false));
  m.cache_bytes = cache_bytes.value_or(0);
  m.pinned_bytes = pinned_bytes.value_or(0);
  m.free_bytes = free_bytes.value_or(0);
  return Message{std::move(m)};
}

Result<Message> parse_pin_request(const Fields& f) {
  PinRequest m;
  KH_TRY_ASSIGN(m.id, f.uint("id"));
  KH_TRY_ASSIGN(m.action, f.string("action"));
  if (m.action != "add" && m.action != "remove" && m.action != "list")
    return f.invalid("action", "one of add, remove, list");
  KH_TRY_ASSIGN(m.repo, f.optional_string("repo"));
  KH_TRY_ASSIGN(m.revision, f.optional_string("revision"));
  KH_TRY_ASSIGN(m.variants, f.optional_strings("variants"));
  if (m.variants.size() > kMaxPinVariants) return f.invalid("variants", "at most 256 names");
  KH_TRY_ASSIGN(auto source, f.optional_string("source"));
  m.source = source.value_or("");
  if (m.action != "list" && !m.repo) return f.invalid("repo", "a repo id (org/name)");
  if (m.action == "add" && !m.revision) return f.invalid("revision", "a commit or a ref");
  return Message{std::move(m)};
}

Result<Message> parse_pin_reply(const Fields& f) {
  PinReply m;
  KH_TRY_ASSIGN(m.id, f.uint("id"));
  KH_TRY_ASSIGN(const auto* repos, f.array("repos"));
  m.repos = *repos;
  KH_TRY_ASSIGN(auto removed, f.optional_uint("removed"));
  m.removed = removed.value_or(0);
  return Message{std::move(m)};
}

}  // namespace detail
}  // namespace kernelhub::proto
