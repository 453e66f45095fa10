// The offline test signer (tests/trust/sigstore/test_signer.py): a throw-away Sigstore
// instance, kernel trees signed by it, and admin policies against its trusted root.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace kernelhub::testing {

inline const std::filesystem::path kSignedReluSource =
    std::filesystem::path(KH_FIXTURE_HUB).parent_path() / "src" / "relu-v1";

inline const std::string kSigner =
    std::string(KH_SOURCE_DIR) + "/tests/trust/sigstore/test_signer.py";

inline std::string python() {
  const char* python = std::getenv("KERNELHUB_PYTHON");
  REQUIRE(python != nullptr);  // the test signer runs on the venv python; without it, fail
  return python;
}

// A throw-away Sigstore instance and kernel trees signed by it.
struct Signer {
  TempDir dir;
  std::filesystem::path keys = dir.path() / "keys";

  Signer() {
    const auto made = run_command({python(), kSigner, "init", keys.string()});
    INFO(made.err);
    REQUIRE(made.exit_code == 0);
  }
  // A copy of relu v1 whose variants' metadata.json are signed with `options` (test_signer
  // sign flags); `after` may then change the tree.
  std::filesystem::path signed_tree(const std::string& name,
                                    const std::vector<std::string>& options = {}) const {
    std::filesystem::path tree = dir.path() / name;
    std::filesystem::copy(kSignedReluSource, tree, std::filesystem::copy_options::recursive);
    for (const auto& variant : std::filesystem::directory_iterator(tree / "build")) {
      std::vector<std::string> argv{python(),
                                    kSigner,
                                    "sign",
                                    keys.string(),
                                    (variant.path() / "metadata.json").string(),
                                    (variant.path() / "metadata.json.sigstore").string()};
      argv.insert(argv.end(), options.begin(), options.end());
      const auto signing = run_command(argv);
      INFO(signing.err);
      REQUIRE(signing.exit_code == 0);
    }
    return tree;
  }
  // A signed tree whose metadata.json then changes (its digests still match the files).
  std::filesystem::path tampered_tree(const std::string& name) const {
    std::filesystem::path tree = signed_tree(name);
    for (const auto& variant : std::filesystem::directory_iterator(tree / "build")) {
      std::ofstream(variant.path() / "metadata.json", std::ios::app) << "\n";
    }
    return tree;
  }
  // A signed tree whose bundles are then padded past the 1 MiB bundle cap (JSON whitespace:
  // the bundle is otherwise valid).
  std::filesystem::path oversized_tree(const std::string& name) const {
    std::filesystem::path tree = signed_tree(name);
    for (const auto& variant : std::filesystem::directory_iterator(tree / "build")) {
      std::ofstream(variant.path() / "metadata.json.sigstore", std::ios::app)
          << std::string((1u << 20) + 1, ' ');
    }
    return tree;
  }
  // An admin policy with `mode` against this instance's trusted root.
  std::filesystem::path policy(const std::string& mode, const std::string& extra = "") const {
    std::filesystem::path path = dir.path() / ("policy-" + mode + ".toml");
    std::ofstream(path) << "[signatures]\nmode = \"" << mode << "\"\ntrusted_root = \""
                        << (keys / "trusted_root.json").string() << "\"\n"
                        << extra;
    return path;
  }
};

}  // namespace kernelhub::testing
