// Writes a bundle (.tar.zst) entry by entry, with any type, size or link a hostile archive
// may hold, and manifests of any shape: what the bundle tests, in-process and through
// kernelhubd, import. Needs libarchive and kh_bundle.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/cache/bundle/bundle_manifest.hpp"
#include "kernelhub/trust/digest.hpp"

namespace kernelhub::testing {

class ArchiveBuilder {
 public:
  explicit ArchiveBuilder(const std::filesystem::path& path) : a_(archive_write_new()) {
    archive_write_add_filter_zstd(a_);
    archive_write_set_format_pax_restricted(a_);
    REQUIRE(archive_write_open_filename(a_, path.c_str()) == ARCHIVE_OK);
  }
  ~ArchiveBuilder() { archive_write_free(a_); }
  ArchiveBuilder(const ArchiveBuilder&) = delete;
  ArchiveBuilder& operator=(const ArchiveBuilder&) = delete;

  void file(const std::string& name, const std::string& content,
            std::optional<std::int64_t> declared = std::nullopt) {
    entry(name, AE_IFREG, declared.value_or(static_cast<std::int64_t>(content.size())), content);
  }
  void zeros(const std::string& name, std::size_t size) {
    entry(name, AE_IFREG, static_cast<std::int64_t>(size), {});
    const std::string chunk(1 << 20, '\0');
    for (std::size_t done = 0; done < size; done += chunk.size()) {
      archive_write_data(a_, chunk.data(), std::min(chunk.size(), size - done));
    }
  }
  void special(const std::string& name, unsigned type, const std::string& link = {}) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, 0644);
    if (type == AE_IFLNK) archive_entry_set_symlink(e, link.c_str());
    archive_write_header(a_, e);
    archive_entry_free(e);
  }
  void hardlink(const std::string& name, const std::string& target) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_hardlink(e, target.c_str());
    archive_entry_set_size(e, 0);
    archive_write_header(a_, e);
    archive_entry_free(e);
  }
  void manifest(const cache::bundle::BundleManifest& m) {
    file(std::string(cache::bundle::kManifestName), cache::bundle::to_json_text(m));
  }
  void close() { archive_write_close(a_); }

 private:
  void entry(const std::string& name, unsigned type, std::int64_t size, const std::string& data) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, 0444);
    archive_entry_set_size(e, size);
    archive_write_header(a_, e);
    if (!data.empty()) archive_write_data(a_, data.data(), data.size());
    archive_entry_free(e);
  }
  archive* a_;
};

// `count` small python files under build/<variant>/ (no metadata.json: a legacy build), for
// bundles of many blobs.
inline std::map<std::string, std::string> numbered_files(const std::string& variant,
                                                         std::size_t count) {
  std::map<std::string, std::string> files;
  for (std::size_t i = 0; i < count; ++i) {
    files["build/" + variant + "/m" + std::to_string(i) + ".py"] =
        "x = " + std::to_string(i) + "\n";
  }
  return files;
}

// A bundle of one repo at `commit` claiming `refs`, whose files (repo path -> content) are
// written as the manifest lists them, each distinct content once: a real bundle's layout.
inline void write_repo_bundle(const std::filesystem::path& path, const trust::RepoId& repo,
                              const std::string& commit, const std::vector<std::string>& refs,
                              const std::vector<std::string>& variants,
                              const std::map<std::string, std::string>& files) {
  cache::bundle::BundledRepo bundled{repo, commit, refs, variants, {}};
  std::map<std::string, std::string> blobs;  // etag -> content
  for (const auto& [file, content] : files) {
    const bool lfs = file.ends_with(".so");
    const std::string etag = lfs ? trust::sha256_hex(content) : trust::git_blob_sha1_hex(content);
    bundled.files.push_back({file, content.size(), etag, trust::sha256_hex(content)});
    blobs.emplace(etag, content);
  }
  ArchiveBuilder builder(path);
  builder.manifest({{bundled}});
  for (const auto& [etag, content] : blobs) {
    builder.file(cache::bundle::blob_entry_name(repo, etag), content);
  }
  builder.close();
}

}  // namespace kernelhub::testing
