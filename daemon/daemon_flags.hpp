// Private to the kernelhubd executable: its command line, every flag and what it sets in
// DaemonOptions (a limit flag wins over the policy's [daemon] key; neither: the default).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "kernelhub/daemon/daemon.hpp"

namespace kernelhub::daemon {

class DaemonFlags {
 public:
  // Registers every flag on `app`; they write into `options`, which must outlive this.
  DaemonFlags(CLI::App& app, DaemonOptions& options);
  // Once `app` has parsed: the values that take a conversion.
  void apply() const;

 private:
  void add_limit_flags(CLI::App& app);
  void add_http_flags(CLI::App& app);

  DaemonOptions& options_;
  std::string policy_;
  long resolve_ttl_s_ = 0;
  long header_timeout_s_ = 0;
};

}  // namespace kernelhub::daemon
