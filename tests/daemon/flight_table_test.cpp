// kernelhubd's single flight on its own, stepped: the runner is the test's, and each flight
// runs only when the test lets it, so joins, turns and shutdown are checked without a Hub and
// without sleeping.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "kernelhub/daemon/flight_table.hpp"

using namespace kernelhub;
using daemon::FlightTable;

namespace {

const trust::RepoId kRelu{"kernels-community", "relu"};
const trust::RepoId kGelu{"kernels-community", "gelu"};

fetch::Request request_for(const trust::RepoId& repo) { return {repo, *fetch::Ref::version(1)}; }

fetch::FlightKey key_of(const fetch::Request& request) {
  return {{request.repo, request.ref}, fetch::Selection::of(request), false};
}

// Runs flights only when released: each call waits until the test releases its repo, after
// publishing one progress step, and returns a result naming the repo.
class SteppedRunner {
 public:
  FlightTable::Runner runner() {
    return [this](const fetch::FlightKey&, const fetch::Request& request, const std::string&,
                  const FlightTable::Publish& publish) -> Result<hub::FetchResult> {
      const std::string repo = request.repo.str();
      {
        std::unique_lock lock(mutex_);
        started_.push_back(repo);
        cv_.notify_all();
      }
      publish(hub::FetchProgress{});
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return released_.count(repo) != 0; });
      released_.erase(repo);
      hub::FetchResult result;
      result.manifest.repo = request.repo;
      result.manifest.commit = std::string(40, 'a');
      return result;
    };
  }
  void wait_started(std::size_t n) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return started_.size() >= n; });
  }
  void release(const trust::RepoId& repo) {
    std::lock_guard lock(mutex_);
    released_.insert(repo.str());
    cv_.notify_all();
  }
  std::vector<std::string> started() {
    std::lock_guard lock(mutex_);
    return started_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> started_;
  std::multiset<std::string> released_;
};

// Counts the progress a waiter received, so a test knows the waiter has joined.
class Waiter {
 public:
  Waiter(FlightTable& table, const fetch::Request& request)
      : thread_([this, &table, request] {
          auto result =
              table.join(key_of(request), request, "test", [this](const hub::FetchProgress&) {
                std::lock_guard lock(mutex_);
                ++progress_;
                cv_.notify_all();
              });
          std::lock_guard lock(mutex_);
          result_.emplace(std::move(result));
          cv_.notify_all();
        }) {}
  ~Waiter() { thread_.join(); }
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  void wait_joined() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return progress_ > 0; });
  }
  Result<hub::FetchResult> result() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return result_.has_value(); });
    return *result_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int progress_ = 0;
  std::optional<Result<hub::FetchResult>> result_;
  std::thread thread_;  // last: it uses the members above
};

// Waits until `table` holds `n` flights with a thread (a flight registers before it queues).
void wait_flights(const FlightTable& table, std::size_t n) {
  while (table.flights() != n) std::this_thread::yield();
}

// One download at a time: relu's flight runs (until the test releases it), gelu's waits for
// its turn.
struct OneTurn {
  SteppedRunner runner;
  daemon::AtomicCounters counters;
  FlightTable table{runner.runner(), [](const fetch::FlightKey&, const hub::FetchResult&) {},
                    counters};
  std::optional<Waiter> relu;
  std::optional<Waiter> gelu;

  OneTurn() {
    table.set_max_downloads(1);
    relu.emplace(table, request_for(kRelu));
    runner.wait_started(1);
    gelu.emplace(table, request_for(kGelu));
    wait_flights(table, 2);
  }
};

}  // namespace

TEST_CASE("requests for a key in flight share one download, and each gets its result",
          "[daemon][flights]") {
  SteppedRunner runner;
  daemon::AtomicCounters counters;
  std::vector<std::string> landed;
  FlightTable table(
      runner.runner(),
      [&](const fetch::FlightKey&, const hub::FetchResult& r) {
        landed.push_back(r.manifest.repo.str());
      },
      counters);
  {
    Waiter first(table, request_for(kRelu));
    Waiter second(table, request_for(kRelu));
    first.wait_joined();
    second.wait_joined();  // both are waiting on the one flight: its progress reached both
    runner.release(kRelu);
    REQUIRE(first.result());
    REQUIRE(second.result());
    CHECK(second.result()->manifest.repo == kRelu);
  }
  CHECK(runner.started() == std::vector<std::string>{"kernels-community/relu"});
  CHECK(landed == std::vector<std::string>{"kernels-community/relu"});
  CHECK(counters.flights.load() == 1);

  // A flight that has landed is not joined: the next request starts its own.
  {
    Waiter later(table, request_for(kRelu));
    runner.wait_started(2);
    runner.release(kRelu);
    CHECK(later.result());
  }
  CHECK(runner.started().size() == 2);
  CHECK(counters.flights.load() == 2);
  CHECK(table.wait_downloads(std::chrono::steady_clock::now()));
}

TEST_CASE_METHOD(OneTurn, "over max_downloads, flights wait their turn in arrival order",
                 "[daemon][flights]") {
  // gelu's flight exists but has no turn while relu's runs.
  CHECK(runner.started() == std::vector<std::string>{"kernels-community/relu"});
  runner.release(kRelu);
  CHECK(relu->result());
  runner.wait_started(2);
  CHECK(runner.started().back() == "kernels-community/gelu");
  runner.release(kGelu);
  CHECK(gelu->result());
}

TEST_CASE_METHOD(OneTurn,
                 "stopping: queued flights land shutting_down unrun, and waiters are let go",
                 "[daemon][flights]") {
  table.stop_queued();
  const auto queued = gelu->result();
  REQUIRE_FALSE(queued);
  CHECK(queued.error().code == ErrorCode::shutting_down);
  CHECK(runner.started().size() == 1);  // gelu never ran

  // relu's download is stuck: once the grace is over its waiter is answered, the flight
  // itself is abandoned (it lands when it lands).
  CHECK_FALSE(table.wait_downloads(std::chrono::steady_clock::now()));
  table.abandon_waiters();
  const auto abandoned = relu->result();
  REQUIRE_FALSE(abandoned);
  CHECK(abandoned.error().code == ErrorCode::shutting_down);
  CHECK(abandoned.error().message.find("did not finish within its shutdown grace") !=
        std::string::npos);
  runner.release(kRelu);  // so the table's destructor can join it
}
