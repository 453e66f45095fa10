#include "kernelhub/proto/fetch_wire.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernelhub/variant/variant.hpp"

namespace kernelhub::proto {
namespace {

// The vocabulary's errors, as a bad frame's.
Unexpected bad_request(const Error& error) {
  return fail(ErrorCode::invalid_request, error.message);
}

}  // namespace

FetchRequest to_wire(const fetch::Request& request, RequestId id, bool prefetch,
                     std::map<std::string, std::string> env) {
  FetchRequest m;
  m.prefetch = prefetch;
  m.id = id;
  m.repo = request.repo.str();
  m.version = request.ref.version_number();
  m.revision = request.ref.revision_name();
  m.variant = request.variants.name();
  m.all_variants = request.variants.is_all();
  if (const auto& p = request.target_platform) {
    m.torch_version = std::to_string(p->torch_major) + "." + std::to_string(p->torch_minor);
    m.backend = p->backend;
    m.cxx11_abi = p->cxx11_abi;
    m.arch = p->arch;
    m.os = p->os;
  } else {
    m.torch_version = request.platform.torch_version;
    m.backend = request.platform.backend;
  }
  m.env = std::move(env);
  if (const auto& lock = request.lock()) m.locked = lock->variant_hashes;
  return m;
}

std::string describe_wire(const FetchRequest& m) {
  return m.repo + (m.version ? " v" + std::to_string(*m.version) : " @" + m.revision.value_or("?"));
}

Result<fetch::Request> from_wire(const FetchRequest& m) {
  auto repo = trust::RepoId::parse(m.repo);
  if (!repo) return bad_request(repo.error());
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::optional<std::int64_t> version;
  if (m.version) version = static_cast<std::int64_t>(std::min(*m.version, kMax));
  auto ref = fetch::Ref::one_of(version, m.revision, "version and revision");
  if (!ref) return bad_request(ref.error());
  std::optional<fetch::Request> request;
  if (m.locked) {
    // The commit as a lock pins it: what the Hub then says of it is the same answer an
    // in-process fetch of that lock gets.
    auto locked = fetch::Request::locked(*repo, ref->ref_name(), {*m.locked});
    if (!locked)
      return fail(ErrorCode::invalid_request, "a locked request names its commit as the revision");
    request.emplace(std::move(*locked));
  } else {
    request.emplace(std::move(*repo), std::move(*ref));
  }
  auto variants = fetch::VariantChoice::one_of(m.variant, m.all_variants);
  if (!variants) return bad_request(variants.error());
  request->variants = std::move(*variants);
  request->platform = {m.torch_version, m.backend};
  if (request->variants.is_best() && m.torch_version && m.backend) {
    auto platform = variant::detect_platform(util::Environment{}, request->platform);  // parses
    if (!platform) return bad_request(platform.error());
    if (m.arch) platform->arch = *m.arch;
    if (m.os) platform->os = *m.os;
    platform->cxx11_abi = m.cxx11_abi.value_or(platform->os == "linux");
    request->target_platform = std::move(*platform);
  }
  return std::move(*request);
}

}  // namespace kernelhub::proto
