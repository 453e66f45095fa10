// A small attention model run with context parallelism: the app forks its ranks (2 by
// default), each forms a Gloo group over a TCPStore on loopback, holds 1/N of the sequence,
// and runs the model with enable_parallelism (ring or Ulysses); the outputs are gathered and
// rank 0 compares them with the same model run on the whole sequence in one process.
//
//   context_parallel_app [ring|ulysses] [ranks]
#include <kernelhub/attention.hpp>
#include <kernelhub/context_parallel.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <ATen/ops/abs.h>
#include <ATen/ops/randn.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace ka = kernelhub::attention;
namespace kp = kernelhub::parallel;

// x -> qkv projection -> attention -> output projection, with a residual. The projections
// act per token, so a slice of the sequence goes through them unchanged.
class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(int64_t dim, int64_t heads)
      : heads_(heads),
        qkv_(register_module("qkv", torch::nn::Linear(dim, 3 * dim))),
        attention_(register_module("attention", ka::Attention())),
        out_(register_module("out", torch::nn::Linear(dim, dim))) {}

  at::Tensor forward(const at::Tensor& x) {
    const int64_t batch = x.size(0);
    const int64_t seq = x.size(1);
    const int64_t head_dim = x.size(2) / heads_;
    auto qkv = qkv_(x).view({batch, seq, 3, heads_, head_dim});
    ka::AttentionOptions options;
    options.is_causal = true;  // causal: the ring skips the blocks a slice may not see
    auto attended =
        attention_->forward(qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), options);
    return x + out_(attended.reshape({batch, seq, heads_ * head_dim}));
  }

 private:
  int64_t heads_;
  torch::nn::Linear qkv_;
  ka::Attention attention_;
  torch::nn::Linear out_;
};
TORCH_MODULE(Block);

namespace {

int run_rank(int rank, int ranks, const std::string& mode, int port, int listen_fd) {
  kp::GroupOptions group;
  group.store_port = port;
  group.store_listen_fd = listen_fd;
  group.rank = rank;
  group.world_size = ranks;
  group.timeout = std::chrono::milliseconds(30'000);
  kp::ContextParallelConfig config;
  (mode == "ulysses" ? config.ulysses_degree : config.ring_degree) = ranks;
  auto cp = kp::make_context_parallel(config, kp::ProcessGroup::gloo(group));

  at::manual_seed(0);  // the same weights and input on every rank
  torch::nn::Sequential model(Block(64, 4), Block(64, 4));
  const at::Tensor x = at::randn({2, 128, 64});
  kp::enable_parallelism(*model, cp);
  const at::Tensor y = cp->gather(model->forward(cp->shard(x)));
  if (rank != 0) return 0;
  kp::disable_parallelism(*model);
  const double diff = at::abs(y - model->forward(x)).max().item<double>();
  const kp::CommStats stats = cp->stats();
  std::printf(
      "context parallel (%s, %d processes, causal): max |difference| vs one process = %.3g\n"
      "rank 0: %lld attention calls, %.1f ms waiting on communication, %lld bytes sent\n",
      mode.c_str(), ranks, diff, static_cast<long long>(stats.calls), 1e3 * stats.comm_seconds,
      static_cast<long long>(stats.bytes_sent));
  return diff < 1e-5 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ring";
  const int ranks = argc > 2 ? std::atoi(argv[2]) : 2;
  if ((mode != "ring" && mode != "ulysses") || ranks < 2) {
    std::fprintf(stderr, "usage: context_parallel_app [ring|ulysses] [ranks >= 2]\n");
    return 2;
  }
  // Rank 0's store takes over a socket listening on a free loopback port: no port race.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(listener, 16) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("listening socket");
    return 1;
  }
  // Fork before anything touches torch (its thread pools do not survive a fork).
  for (int rank = 0; rank < ranks; ++rank) {
    if (::fork() == 0) {
      if (rank != 0) ::close(listener);
      try {
        const int code =
            run_rank(rank, ranks, mode, ntohs(addr.sin_port), rank == 0 ? listener : -1);
        std::fflush(stdout);  // _Exit does not flush
        std::_Exit(code);
      } catch (const std::exception& error) {
        std::fprintf(stderr, "rank %d: %s\n", rank, error.what());
        std::_Exit(1);
      }
    }
  }
  ::close(listener);
  int failed = 0;
  for (int i = 0; i < ranks; ++i) {
    int status = 0;
    ::wait(&status);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  if (failed != 0) std::fprintf(stderr, "%d of %d ranks failed\n", failed, ranks);
  return failed == 0 ? 0 : 1;
}
