// One online fetch of one commit: which files of the chosen variants are needed, which of
// them the cache already holds (re-hashed, never trusted by name), the downloads, the
// metadata.json digest check and the publish. Nothing becomes visible before publish().
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/cache/blob_writer.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/hub/fetcher.hpp"
#include "kernelhub/hub/hub_api.hpp"
#include "kernelhub/trust/metadata.hpp"

namespace kernelhub::hub {

class FetchPlan {
 public:
  FetchPlan(const HubConfig& config, HttpClient& http, HubApi& api, cache::KernelCache& cache,
            trust::RepoId repo, std::string commit);

  // Called with each variant's metadata.json (etag, bytes; empty when the variant has none)
  // and its metadata.json.sigstore (hub::BundleBytes: none, its bytes, or too_large) before
  // metadata.json is parsed; an error stops the plan.
  using SignatureHook = std::function<Result<void>(
      const std::string& variant, const std::string& metadata_etag, std::string_view metadata,
      const Result<std::optional<std::string>>& bundle)>;
  void set_signature_hook(SignatureHook hook) { signature_hook_ = std::move(hook); }
  // Asked before download() writes anything, with the bytes it will write.
  void set_space_gate(Fetcher::SpaceGate gate) { space_gate_ = std::move(gate); }

  // Adds the files of build/<variant>/ (a recursive tree listing). metadata.json, if
  // present, is fetched here (small, in memory, size-capped) so a bad one fails early; with a
  // signature hook, metadata.json.sigstore too, and the hook runs before the parse.
  Result<void> add_variant(const std::string& variant, const std::vector<TreeEntry>& entries);
  // Downloads every needed blob in parallel into temp files.
  Result<void> download(const ProgressCallback& progress);
  // Every file of every variant against its metadata.json digests (when present).
  Result<void> verify() const;
  // Commits the blobs and links snapshots/<commit>/... (the caller writes refs after).
  Result<void> publish();

  std::vector<fetch::ManifestFile> fetched_files() const;

 private:
  struct Slot {  // one blob to write
    cache::BlobWriter writer;
    std::string path;     // first repo path with this etag
    bool filled = false;  // written from memory (metadata.json), not downloaded
  };
  struct Planned {
    TreeEntry entry;
    std::string variant;
    std::string sha256;
    std::optional<std::size_t> slot;
  };

  Result<std::size_t> slot_for(const TreeEntry& entry);
  // sha256 of a cached blob after checking it still matches its etag; nullopt if absent
  // or damaged (then it is downloaded again).
  std::optional<std::string> cached_sha256(const TreeEntry& entry) const;
  // A small file of the plan (metadata.json, its bundle), from the cache or the Hub.
  Result<std::string> read_small(Planned& file);

  const HubConfig& config_;
  HttpClient& http_;
  HubApi& api_;
  cache::KernelCache& cache_;
  trust::RepoId repo_;
  std::string commit_;
  bool prepared_ = false;
  std::vector<Planned> files_;
  std::deque<Slot> slots_;  // deque: writers keep their addresses for the downloader
  std::map<std::string, std::size_t> slot_by_etag_;
  std::map<std::string, trust::KernelMetadata> metadata_;  // by variant
  SignatureHook signature_hook_;
  Fetcher::SpaceGate space_gate_;
};

}  // namespace kernelhub::hub
