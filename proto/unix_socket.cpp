// connect_unix / listen_unix: AF_UNIX stream sockets by path.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "kernelhub/proto/transport.hpp"
#include "kernelhub/util/system_error.hpp"

namespace kernelhub::proto {
namespace {

Result<sockaddr_un> address_of(const std::filesystem::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string& text = path.native();
  if (text.empty() || text.size() >= sizeof addr.sun_path)
    return fail(ErrorCode::invalid_argument, "socket path '" + text + "' is empty or longer than " +
                                                 std::to_string(sizeof addr.sun_path - 1) +
                                                 " bytes");
  std::memcpy(addr.sun_path, text.c_str(), text.size() + 1);
  return addr;
}

Result<UniqueFd> new_socket() {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return fail(ErrorCode::io, std::string("socket: ") + util::errno_text(errno));
  return fd;
}

}  // namespace

Result<UniqueFd> connect_unix(const std::filesystem::path& path) {
  KH_TRY_ASSIGN(const auto addr, address_of(path));
  auto fd = new_socket();
  if (!fd) return fd;
  if (::connect(fd->get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
  int err = errno;
  if (err == EINTR) {  // the connect goes on in the background; wait for its outcome
    pollfd p{fd->get(), POLLOUT, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    socklen_t len = sizeof err;
    if (::getsockopt(fd->get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err == 0) return fd;
  }
  const bool absent = err == ENOENT || err == ECONNREFUSED || err == ENOTDIR;
  return fail(absent ? ErrorCode::network : ErrorCode::io,
              "connect " + path.string() + ": " + std::strerror(err));
}

Result<UniqueFd> listen_unix(const std::filesystem::path& path, int backlog) {
  KH_TRY_ASSIGN(const auto addr, address_of(path));
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return fail(ErrorCode::io, path.string() + " exists and is not a socket; not replacing it");
    // A socket file someone still accepts on is live, not stale: never steal it.
    if (connect_unix(path))
      return fail(ErrorCode::io, "another process is listening on " + path.string());
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return fail(ErrorCode::io,
                  "unlink stale socket " + path.string() + ": " + std::strerror(errno));
  }
  auto fd = new_socket();
  if (!fd) return fd;
  if (::bind(fd->get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return fail(ErrorCode::io, "bind " + path.string() + ": " + std::strerror(errno));
  if (::listen(fd->get(), backlog) != 0)
    return fail(ErrorCode::io, "listen " + path.string() + ": " + std::strerror(errno));
  return fd;
}

}  // namespace kernelhub::proto
