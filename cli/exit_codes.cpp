#include "exit_codes.hpp"

#include <iostream>
#include <string>

#include "kernelhub/util/error_table.hpp"
#include "kernelhub/util/printable.hpp"

namespace kernelhub::cli {

int exit_code_for(ErrorCode code) { return error_info(code).exit_code; }

int report(const Error& error) {
  // The message may quote a lockfile, a Hub or the daemon: escaped, it stays one line that
  // cannot drive the terminal.
  std::cerr << "kernelhub: " << to_string(error.code) << ": " << util::printable(error.message)
            << "\n";
  return exit_code_for(error.code);
}

}  // namespace kernelhub::cli
