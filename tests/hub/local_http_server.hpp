// A tiny httplib server on an ephemeral loopback port, run on a background thread, for
// tests that need responses the real HubServer refuses to produce.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>

namespace kernelhub::testing {

class LocalHttpServer {
 public:
  httplib::Server server;

  void start() {
    port_ = server.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server.listen_after_bind(); });
    for (int i = 0; i < 500 && !server.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~LocalHttpServer() {
    server.stop();
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_ = 0;
  std::thread thread_;
};

}  // namespace kernelhub::testing
