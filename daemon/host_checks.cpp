#include "kernelhub/daemon/host_checks.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstring>

#include "kernelhub/proto/transport.hpp"

namespace kernelhub::daemon {

namespace fs = std::filesystem;

namespace {

Unexpected io_error(const std::string& what, const fs::path& path, int err) {
  return fail(ErrorCode::io, what + " " + path.string() + ": " + std::strerror(err));
}

}  // namespace

Result<UniqueFd> open_cache_root(const fs::path& root) {
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0) {
    if (errno != ENOENT) return io_error("cannot stat cache root", root, errno);
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec)
      return fail(ErrorCode::io, "cannot create cache root " + root.string() + ": " + ec.message());
    ::chmod(root.c_str(), 0755);
    if (::lstat(root.c_str(), &st) != 0) return io_error("cannot stat cache root", root, errno);
  }
  if (S_ISLNK(st.st_mode))
    return fail(ErrorCode::io, "cache root " + root.string() + " is a symlink: refusing it");
  if (!S_ISDIR(st.st_mode))
    return fail(ErrorCode::io, "cache root " + root.string() + " is not a directory");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fail(ErrorCode::io,
                "cache root " + root.string() + " is writable by group or others: refusing it");
  }
  UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return io_error("cannot open cache root", root, errno);
  struct statvfs vfs {};
  if (::fstatvfs(fd.get(), &vfs) != 0) return io_error("cannot statvfs cache root", root, errno);
  if ((vfs.f_flag & ST_NOEXEC) != 0) {
    return fail(ErrorCode::io, "cache root " + root.string() +
                                   " is on a noexec mount: kernels could not be loaded");
  }
  return fd;
}

Result<UniqueFd> open_listener(const fs::path& path, bool allow_activation, bool& activated) {
  activated = false;
  if (allow_activation) {
    const int n = ::sd_listen_fds(0);
    if (n > 1)
      return fail(ErrorCode::invalid_argument,
                  "systemd passed " + std::to_string(n) + " sockets; expected one");
    if (n == 1) {
      if (::sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, nullptr, 0) <= 0) {
        return fail(ErrorCode::invalid_argument,
                    "the socket systemd passed is not a listening Unix stream socket");
      }
      activated = true;
      return UniqueFd(SD_LISTEN_FDS_START);
    }
  }
  std::error_code ec;
  if (path.has_parent_path() && !fs::exists(path.parent_path(), ec)) {
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      return fail(ErrorCode::io,
                  "cannot create " + path.parent_path().string() + ": " + ec.message());
    ::chmod(path.parent_path().c_str(), 0755);
  }
  auto listener = proto::listen_unix(path, 128);
  if (!listener) return listener;
  // Everyone may reach the socket; the admin policy (SO_PEERCRED) decides who is served.
  if (::chmod(path.c_str(), 0666) != 0) return io_error("cannot chmod socket", path, errno);
  return listener;
}

Result<PeerCredentials> peer_credentials(int socket_fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return fail(ErrorCode::io, std::string("SO_PEERCRED: ") + std::strerror(errno));
  }
  PeerCredentials peer{cred.pid, cred.uid, cred.gid, {}};
  // SO_PEERGROUPS (Linux 4.13): the groups recorded at connect(), not racy like /proc/<pid>.
  std::vector<gid_t> groups(64);
  for (int attempt = 0; attempt < 4; ++attempt) {
    socklen_t size = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &size) == 0) {
      groups.resize(size / sizeof(gid_t));
      peer.groups = std::move(groups);
      break;
    }
    if (errno != ERANGE) break;  // no supplementary groups known: primary gid only
    groups.resize(size / sizeof(gid_t) + 1);
  }
  return peer;
}

}  // namespace kernelhub::daemon
