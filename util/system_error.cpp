#include "kernelhub/util/system_error.hpp"

#include <cerrno>
#include <cstring>

namespace kernelhub::util {

std::string errno_text(int err) {
  std::string text = std::strerror(err);
  if (err == EMFILE) {
    text +=
        " (the process reached its open-file limit: raise it with `ulimit -n` in the shell that "
        "starts it, or with LimitNOFILE= in kernelhubd's systemd unit)";
  } else if (err == ENFILE) {
    text += " (the system-wide open-file limit is reached: raise fs.file-max, or close files)";
  }
  return text;
}

}  // namespace kernelhub::util
