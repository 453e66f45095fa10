// Seams around the Hub-API routes for whoever embeds a HubServer. `kernelhub serve` passes
// none (the defaults do nothing); test support decorates a server with a fault plan through
// them (tests/support/fault_hub.hpp), so that no fault code ships in the product.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <functional>
#include <string>

namespace kernelhub::hub::server {

// A file download the routes are about to answer.
struct FileDownload {
  // resolve: the /resolve/ URL, before an LFS file is redirected to its object URL.
  // body: the bytes are about to be served (a non-LFS resolve, or the LFS object URL).
  enum class Stage { resolve, body };
  Stage stage = Stage::body;
  std::string repo_path;
  std::uint64_t size = 0;  // of the whole file
};

// Writes up to `length` body bytes from body offset `offset` into the sink; false drops the
// connection (never a short reply that looks complete).
using BodyWriter =
    std::function<bool(std::size_t offset, std::size_t length, httplib::DataSink& sink)>;

// The body of a GET of a file: `length` bytes from `first` of the file.
struct FileBody {
  std::uint64_t first = 0;
  std::uint64_t length = 0;
  bool chunked = false;  // no Content-Length: written until the writer returns false
  BodyWriter write;
};

class ServeHooks {
 public:
  ServeHooks() = default;
  virtual ~ServeHooks() = default;
  ServeHooks(const ServeHooks&) = delete;
  ServeHooks& operator=(const ServeHooks&) = delete;

  // Routes of the hook's own, registered before the Hub API's.
  virtual void add_routes(httplib::Server& /*server*/) {}
  // Before routing; true when the hook answered the request itself.
  virtual bool before_route(const httplib::Request& /*req*/, httplib::Response& /*res*/) {
    return false;
  }
  // After a route answered, before anything is written.
  virtual void after_route(const httplib::Request& /*req*/, httplib::Response& /*res*/) {}
  // At each stage of a file download; true when the hook answered. A hook may also take the
  // request's ranges (http::take_ranges) so that the file is served whole.
  virtual bool before_file(const httplib::Request& /*req*/, httplib::Response& /*res*/,
                           const FileDownload& /*file*/) {
    return false;
  }
  // The body of a GET about to be served; a hook may wrap its writer or change its shape.
  virtual void shape_body(const FileDownload& /*file*/, FileBody& /*body*/) {}
  // The server is stopping: a hook that sleeps inside a writer returns soon.
  virtual void stopping() {}
};

}  // namespace kernelhub::hub::server
