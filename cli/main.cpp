#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <iostream>

#include "commands.hpp"
#include "kernelhub/util/printable.hpp"
#include "kernelhub_version.hpp"

namespace kernelhub::cli {
namespace {

// "%v" escaped (util::printable): warnings quote the Hub's and the cache's names.
class EscapedPayload final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string text =
        util::printable(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedPayload>();
  }
};

}  // namespace
}  // namespace kernelhub::cli

int main(int argc, char** argv) {
  // Log lines (warnings such as "using the cached snapshot") go to stderr: stdout carries
  // the command's output (paths, --json).
  auto logger =
      spdlog::stderr_color_mt("kernelhub", isatty(STDERR_FILENO) ? spdlog::color_mode::automatic
                                                                 : spdlog::color_mode::never);
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<kernelhub::cli::EscapedPayload>('v').set_pattern("kernelhub: %l: %v");
  logger->set_formatter(std::move(formatter));
  spdlog::set_default_logger(logger);
  if (const char* level = std::getenv("KERNELHUB_LOG"))
    spdlog::set_level(spdlog::level::from_str(level));

  CLI::App app{"kernelhub: fetch, verify and cache compute kernels from the Hugging Face Hub"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kernelhub " + std::string(kernelhub::kVersion));

  kernelhub::cli::Action action;
  for (const auto registrar : kernelhub::cli::kCommands) registrar(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the problem; a usage error exits 2 like every other (docs/cli.md, Exit
    // codes), not with CLI11's own 105-115. --help and --version stay 0.
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return action ? action() : 2;
  } catch (const std::exception& e) {
    std::cerr << "kernelhub: internal error: " << kernelhub::util::printable(e.what()) << "\n";
    return 70;
  }
}
