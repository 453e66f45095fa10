// errno as text for messages, with what to do where the user can do something: a process at
// its open-file limit says which limit and how to raise it.
#pragma once

#include <string>

namespace kernelhub::util {

// strerror(err), and for EMFILE / ENFILE the limit to raise (`ulimit -n`, LimitNOFILE= of a
// systemd unit, fs.file-max).
std::string errno_text(int err);

}  // namespace kernelhub::util
