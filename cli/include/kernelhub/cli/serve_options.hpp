// `kernelhub serve`'s options and its run loop, shared with the test-only kh-test-hub, which
// serves the same store through the same server with a fault plan in its hooks.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/hub/server/serve_hooks.hpp"

namespace kernelhub::cli {

struct ServeArgs {
  std::string root;
  std::string bind = "127.0.0.1:0";
  std::optional<int> port;
  std::string port_file;
  std::size_t tree_page_size = 1000;
  std::vector<std::string> trusted_publishers{"kernels-community"};
  std::string tls_cert;
  std::string tls_key;
};

// --root, --bind, --port, --port-file, --tree-page-size, --trusted-publisher, --tls-cert,
// --tls-key on `cmd`.
void add_serve_options(CLI::App& cmd, ServeArgs& args);

// Serves until SIGINT or SIGTERM; the exit code (2: bad options, 1: cannot serve). `program`
// prefixes the error lines.
int serve_until_signal(const std::string& program, const ServeArgs& args,
                       std::shared_ptr<hub::server::ServeHooks> hooks = nullptr);

}  // namespace kernelhub::cli
