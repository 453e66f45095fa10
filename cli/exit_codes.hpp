// How the CLI turns a typed error into one stderr line and a per-class exit code (the
// codes are documented in each command's --help footer).
#pragma once

#include "kernelhub/util/result.hpp"

namespace kernelhub::cli {

inline constexpr const char* kExitCodes =
    "Exit codes (one per error kind, docs/errors.md): 0 ok; 1 other error (local I/O, loading a "
    "kernel, a bug); 2 bad arguments, policy file or lockfile; 3 refused: publisher not trusted, "
    "remote code disabled, signature missing or invalid under [signatures] enforce, a repo the "
    "lockfile does not lock, a uid kernelhubd does not serve, an unsafe kernel file; 4 "
    "repo/revision/version/file not found (or no access); 5 no matching build variant; 6 "
    "network, timeout, rate limit, Hub error, offline without a cached copy, no daemon when one "
    "is required, or the daemon busy or stopping; 7 integrity failure (hash/size mismatch, "
    "oversized or malformed response, unsafe path); 8 disk full.";

int exit_code_for(ErrorCode code);

// Prints "kernelhub: <code>: <message>" on one line, the message through util::printable,
// and returns exit_code_for(code). Every other print of text from outside the CLI (the
// daemon's replies, a cache's names, a certificate's identity) goes through
// util::printable too.
int report(const Error& error);

}  // namespace kernelhub::cli
