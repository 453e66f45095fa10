// kh_daemon_loadgen: the client side of bench/daemon_bench.py. N threads each run, in a
// tight loop, what an app does per kernel: connect + hello (Client::open), fetch, receive
// the fds, close. Prints one JSON line: latency percentiles and requests/s.
//   kh_daemon_loadgen SOCKET REPO VERSION VARIANT CLIENTS SECONDS   (warm: timed loop)
//   kh_daemon_loadgen SOCKET REPO VERSION VARIANT CLIENTS 0         (cold: one fetch each,
//                                                                    all released at once)
//   ... SECONDS reuse: each thread opens one Client and fetches over it repeatedly, as an app
//   that loads several kernels (or reloads one) does; compares with repeated get_kernel calls
//   inside one Python process.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kernelhub/client/client.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7 && !(argc == 8 && std::string(argv[7]) == "reuse")) {
    std::cerr << "usage: kh_daemon_loadgen SOCKET REPO VERSION VARIANT CLIENTS SECONDS [reuse]\n";
    return 2;
  }
  const std::string socket = argv[1];
  auto repo = kernelhub::trust::RepoId::parse(argv[2]);
  if (!repo) return 2;
  const int version = std::stoi(argv[3]);
  const std::string variant = argv[4];
  const int clients = std::stoi(argv[5]);
  const double seconds = std::stod(argv[6]);
  const bool cold = seconds == 0;
  const bool reuse = argc == 8;
  const auto env = kernelhub::util::Environment::from_process();
  kernelhub::client::ClientOptions options;
  options.socket = socket;
  options.require_daemon = true;
  options.pipelined_handshake = true;  // what a one-shot fetch uses
  auto ref = kernelhub::fetch::Ref::version(version);
  auto choice = kernelhub::fetch::VariantChoice::named(variant);
  if (!ref || !choice) {
    std::cerr << "bad version or variant\n";
    return 2;
  }
  kernelhub::fetch::Request request(*repo, *ref);
  request.variants = *choice;

  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(clients));
  std::atomic<std::uint64_t> errors{0};
  std::atomic<std::uint64_t> files{0};
  std::string first_error;
  std::mutex error_mutex;
  std::barrier start(clients + 1);
  Clock::time_point deadline;
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      auto& mine = latencies[static_cast<std::size_t>(t)];
      mine.reserve(cold ? 1 : 1 << 16);
      std::optional<kernelhub::Result<kernelhub::client::Client>> kept;
      if (reuse) kept.emplace(kernelhub::client::Client::open(env, options));
      start.arrive_and_wait();
      do {
        const auto t0 = Clock::now();
        auto client = reuse ? std::move(*kept) : kernelhub::client::Client::open(env, options);
        auto got = client ? client->fetch(request)
                          : kernelhub::Result<kernelhub::client::FetchedKernel>(
                                kernelhub::fail(client.error()));
        if (reuse) kept.emplace(std::move(client));
        const auto t1 = Clock::now();  // fds received; they close with `got`
        if (!got || got->fds.empty() || !got->fds.front()) {
          errors.fetch_add(1);
          std::lock_guard lock(error_mutex);
          if (first_error.empty() && !got) first_error = got.error().message;
          continue;
        }
        files.fetch_add(got->fds.size(), std::memory_order_relaxed);
        mine.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      } while (!cold && Clock::now() < deadline);
    });
  }
  deadline = Clock::now() +
             std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const auto began = Clock::now();
  start.arrive_and_wait();
  for (auto& th : threads) th.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - began).count();

  std::vector<double> all;
  for (const auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  nlohmann::json out{{"clients", clients},      {"requests", all.size()},
                     {"errors", errors.load()}, {"files_received", files.load()},
                     {"seconds", elapsed},      {"rps", static_cast<double>(all.size()) / elapsed}};
  out["p50_us"] = percentile(all, 0.50);
  out["p99_us"] = percentile(all, 0.99);
  out["max_us"] = all.empty() ? 0.0 : *std::max_element(all.begin(), all.end());
  if (!first_error.empty()) out["first_error"] = first_error;
  std::cout << out << std::endl;
  return errors.load() == 0 ? 0 : 1;
}
