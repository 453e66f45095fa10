// `kernelhub bundle create OUT (ORG/NAME... (--version N | --revision R) | --lockfile FILE)
// [--variant V | --all-variants]`: fetches the kernels (through kernelhubd when one runs,
// so the cache is filled first when they are missing) and writes their verified files into
// one .tar.zst. `kernelhub bundle import FILE [--cache-dir D] [--policy P]`: verifies a
// bundle and publishes it into kernelhubd's cache (the open file is passed over the socket)
// or, without a daemon or with --cache-dir, into the user's cache.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "fetch_args.hpp"
#include "kernelhub/cache/bundle/bundle_writer.hpp"
#include "kernelhub/cli/progress_bar.hpp"
#include "kernelhub/hub/hub_api.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/printable.hpp"
#include "kernelhub/util/read_file.hpp"

namespace kernelhub::cli {
namespace {

namespace fs = std::filesystem;

struct CreateArgs {
  std::string out;
  std::vector<std::string> repos;
  FetchArgs fetch;
};

struct ImportArgs {
  std::string file;
  ClientArgs client;
  bool json = false;
};

// A request and the refs its commit satisfies in the bundle ("v1", a branch or tag name).
struct Planned {
  fetch::Request request;
  std::vector<std::string> refs;
};

Result<std::vector<Planned>> plan(const CreateArgs& args) {
  std::vector<Planned> out;
  if (args.fetch.lockfile) {
    KH_TRY_ASSIGN(auto lock, read_args_lockfile(args.fetch));
    for (const auto& entry : lock.entries) {
      const auto& dependency = entry.dependency;
      std::vector<std::string> refs;
      if (dependency && dependency->has_version()) {
        refs.push_back("v" + std::to_string(dependency->version()));
      } else if (dependency && !hub::is_commit_sha(dependency->revision())) {
        refs.push_back(dependency->revision());
      }
      KH_TRY_ASSIGN(auto request, make_locked_request(args.fetch, entry));
      out.push_back({std::move(request), std::move(refs)});
    }
    return out;
  }
  if (args.repos.empty()) {
    return fail(ErrorCode::invalid_argument, "name kernels to bundle, or --lockfile");
  }
  for (const auto& repo : args.repos) {
    KH_TRY_ASSIGN(auto request, make_request(args.fetch, repo));
    std::vector<std::string> refs;
    // The ref the bundle names besides the commit: vN, or a branch or tag.
    if (request.ref.is_version() || !hub::is_commit_sha(request.ref.ref_name()))
      refs.push_back(request.ref.ref_name());
    out.push_back({std::move(request), std::move(refs)});
  }
  return out;
}

// The blob name a snapshot file links to: the cache etag, never trusted for the bytes (they
// are re-hashed from the handed-out descriptor while the bundle is written).
Result<std::string> etag_of(const fs::path& snapshot, const std::string& path) {
  std::error_code ec;
  const auto target = fs::read_symlink(snapshot / path, ec);
  const std::string etag = target.filename().string();
  if (ec || !(trust::is_lower_hex(etag, 40) || trust::is_lower_hex(etag, 64))) {
    return fail(ErrorCode::io, "cannot tell the blob of " + path + " in " + snapshot.string());
  }
  return etag;
}

int run_create(const CreateArgs& args) {
  auto planned = plan(args);
  if (!planned) return report(planned.error());
  auto client = open_client(args.fetch.client);
  if (!client) return report(client.error());
  std::vector<cache::bundle::BundleSource> sources;
  for (const auto& [request, refs] : *planned) {
    ProgressBar bar;
    auto fetched = client->fetch(request, [&bar](const hub::FetchProgress& p) { bar.update(p); });
    bar.finish();
    if (!fetched) return report(fetched.error());
    print_fetch_warnings(*fetched);
    cache::bundle::BundleSource source;
    const fetch::Manifest& manifest = fetched->manifest;
    source.repo = {manifest.repo, manifest.commit, refs, manifest.variants, {}};
    for (const auto& file : manifest.files) {
      auto etag = etag_of(manifest.snapshot_path, file.path);
      if (!etag) return report(etag.error());
      source.repo.files.push_back({file.path, file.size, *etag, file.sha256});
    }
    source.fds = std::move(fetched->fds);
    sources.push_back(std::move(source));
  }
  auto stats = cache::bundle::write_bundle(args.out, sources);
  if (!stats) return report(stats.error());
  if (args.fetch.json) {
    std::cout << nlohmann::json{{"bundle", fs::absolute(args.out).string()},
                                {"repos", sources.size()},
                                {"blobs", stats->blobs},
                                {"content_bytes", stats->content_bytes},
                                {"archive_bytes", stats->archive_bytes}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fs::absolute(args.out).string() << "\n";
  }
  return 0;
}

int run_import(const ImportArgs& args) {
  // A FIFO or a device is refused before anything waits on it (here or in kernelhubd).
  const auto fd = util::open_regular_file(args.file);
  if (!fd) return report(fd.error());
  auto client = open_client(args.client);
  if (!client) return report(client.error());
  auto imported = client->import_bundle(fd->get());
  if (!imported) return report(imported.error());
  for (const auto& repo : *imported) {
    for (const auto& ref : repo["refs_kept"]) {
      std::cerr << "kernelhub: warning: " << util::printable(repo["repo"].get<std::string>()) << " "
                << util::printable(ref.get<std::string>())
                << " stays at the commit accepted before; the bundle's "
                << util::printable(repo["commit"].get<std::string>())
                << " is imported, reachable by its sha\n";
    }
    for (const auto& warning : repo.value("signature_warnings", nlohmann::json::array())) {
      std::cerr << "kernelhub: warning: " << warning.get<std::string>() << "\n";
    }
  }
  if (args.json) {
    std::cout << imported->dump(2) << "\n";
  } else {
    for (const auto& repo : *imported) {
      std::cout << util::printable(repo["snapshot"].get<std::string>()) << "\n";
    }
  }
  return 0;
}

}  // namespace

void register_bundle(CLI::App& app, Action& action) {
  auto* bundle = app.add_subcommand("bundle", "Air-gapped bundles: create and import .tar.zst");
  bundle->require_subcommand(1);

  auto create_args = std::make_shared<CreateArgs>();
  auto* create =
      bundle->add_subcommand("create", "Write kernels (fetched first when missing) to a bundle");
  create->footer(kExitCodes);
  create->add_option("out", create_args->out, "Bundle to write (.tar.zst)")->required();
  auto* repos = create->add_option("repos", create_args->repos, "Kernel repositories ORG/NAME");
  add_fetch_options(*create, create_args->fetch, repos);
  create->callback(
      [create_args, &action] { action = [create_args] { return run_create(*create_args); }; });

  auto import_args = std::make_shared<ImportArgs>();
  auto* import = bundle->add_subcommand("import", "Verify a bundle and publish it into a cache");
  import->footer(kExitCodes);
  import->add_option("file", import_args->file, "Bundle to import")->required();
  add_client_options(*import, import_args->client, /*with_policy=*/true);
  import->add_flag("--json", import_args->json, "Print a JSON description");
  import->callback([import_args, &action] {
    action = [import_args] { return run_import(*import_args);
};
}  // namespace kernelhub::cli
);
}  // namespace kernelhub::cli

}  // namespace kernelhub::cli
