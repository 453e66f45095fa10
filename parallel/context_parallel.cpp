// ContextParallel: the config checked against the group, the mesh's sub-groups, and each
// call routed to ring, Ulysses or both after the checks every rank passes or fails alike
// (so no rank is left waiting in a collective for one that refused).
#include <chrono>
#include <exception>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/tensor.h>

#include "algorithms.hpp"

namespace kernelhub::parallel {

struct ContextParallel::State {
  ContextParallelConfig config;
  int rank = 0;
  int size = 1;
  CommCounters counters;
  CommStats stats;
  std::optional<Communicator> world;
  std::optional<Communicator> ring;     // ring_degree > 1
  std::optional<Communicator> ulysses;  // ulysses_degree > 1
};

namespace {

void validate(const ContextParallelConfig& config, int world_size) {
  const std::string degrees = "ring_degree = " + std::to_string(config.ring_degree) +
                              ", ulysses_degree = " + std::to_string(config.ulysses_degree);
  if (config.ring_degree < 1 || config.ulysses_degree < 1) {
    throw InvalidConfig("`ring_degree` and `ulysses_degree` must be >= 1 (" + degrees + ").");
  }
  if (config.ring_degree == 1 && config.ulysses_degree == 1) {
    throw InvalidConfig(
        "Either ring_degree or ulysses_degree must be greater than 1 in order to use context "
        "parallel inference.");
  }
  if (config.ring_degree * config.ulysses_degree != world_size) {
    throw InvalidConfig("The mesh (" + degrees + ") must cover the process group exactly: " +
                        "ring_degree * ulysses_degree must be its size, " +
                        std::to_string(world_size) + ".");
  }
}

std::vector<int> ranks_where(int size, const std::function<bool(int)>& member) {
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r) {
    if (member(r)) ranks.push_back(r);
  }
  return ranks;
}

BackendPtr make_subgroup(const ProcessGroup::Impl& group, const std::string& prefix,
                         const std::vector<int>& ranks) {
  if (!group.subgroup) {
    throw InvalidConfig("This " + group.name +
                        " process group cannot make sub-groups, which the unified mode "
                        "(ring_degree > 1 and ulysses_degree > 1) needs. Use ProcessGroup::gloo "
                        "or pass one degree as 1.");
  }
  try {
    return group.subgroup(prefix, ranks);
  } catch (const std::exception& error) {
    throw CommunicationError("Context parallelism: creating the sub-group " + prefix +
                             " failed: " + error.what() +
                             " Every rank must construct ContextParallel with the same config.");
  }
}

std::string shape_text(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

}  // namespace

ContextParallel::ContextParallel(ContextParallelConfig config, const ProcessGroup& group)
    : state_(std::make_unique<State>()) {
  const ProcessGroup::Impl& g = *group.impl();
  validate(config, g.size);
  State& s = *state_;
  s.config = config;
  s.rank = g.rank;
  s.size = g.size;
  s.world.emplace(g.world, "process group", s.counters);
  const int u = config.ulysses_degree;
  if (config.ring_degree == 1) {
    s.ulysses.emplace(g.world, "Ulysses group", s.counters);
  } else if (u == 1) {
    s.ring.emplace(g.world, "ring group", s.counters);
  } else {
    // Mesh (ring, ulysses), row-major: Ulysses groups hold consecutive slices, so after their
    // all-to-all the ring's members hold consecutive super-slices in ring order.
    const int ring_index = g.rank / u;
    const int ulysses_index = g.rank % u;
    s.ulysses.emplace(
        make_subgroup(g, "kh_ulysses_" + std::to_string(ring_index),
                      ranks_where(g.size, [&](int r) { return r / u == ring_index; })),
        "Ulysses group", s.counters);
    s.ring.emplace(
        make_subgroup(g, "kh_ring_" + std::to_string(ulysses_index),
                      ranks_where(g.size, [&](int r) { return r % u == ulysses_index; })),
        "ring group", s.counters);
  }
}

ContextParallel::~ContextParallel() = default;

void ContextParallel::check_backend(const std::string& backend) const {
  if (state_->config.ring_degree == 1) return;  // Ulysses runs on any backend
  try {
    attention::require_return_lse(backend);
  } catch (const attention::UnsupportedArgument& error) {
    throw attention::UnsupportedArgument(
        std::string("Context parallelism with ring_degree > 1 merges partial outputs by their "
                    "log-sum-exp: ") +
        error.what() + " Or use Ulysses alone (ring_degree = 1), which runs on any backend.");
  }
}

at::Tensor ContextParallel::forward(const at::Tensor& query, const at::Tensor& key,
                                    const at::Tensor& value,
                                    const attention::AttentionOptions& options) {
  State& s = *state_;
  const auto start = std::chrono::steady_clock::now();
  attention::AttentionOptions named = options;
  if (!named.backend) named.backend = attention::active_backend();
  check_backend(*named.backend);
  if (options.attn_mask) {
    throw attention::UnsupportedArgument(
        "Context parallelism does not take an attn_mask (each rank would need the mask's "
        "slice for every key block). Pass attn_mask = nullopt, or run without context "
        "parallelism.");
  }
  if (options.dropout_p != 0.0) {
    throw attention::UnsupportedArgument(
        "Context parallelism is for inference: pass dropout_p = 0.");
  }
  if (query.dim() != 4 || key.dim() != 4 || value.dim() != 4 || key.size(1) != query.size(1) ||
      value.size(1) != query.size(1)) {
    throw attention::InvalidInput(
        "Context parallelism takes this rank's slices of one sequence: query, key and value "
        "(batch, seq_len, heads, head_dim) with the same seq_len; got query " +
        shape_text(query) + ", key " + shape_text(key) + ", value " + shape_text(value) + ".");
  }
  const int u = s.config.ulysses_degree;
  if (u > 1 && (query.size(2) % u != 0 || key.size(2) % u != 0)) {
    throw attention::InvalidInput(
        "Ulysses splits the heads over its " + std::to_string(u) + " ranks: the query's (" +
        std::to_string(query.size(2)) + ") and key/value's (" + std::to_string(key.size(2)) +
        ") head counts must be multiples of ulysses_degree. Use ring_degree for the rest.");
  }
  if (s.config.check_shards) {
    // Every rank's (batch, seq_len, heads, kv heads, head_dim): a mismatch fails everywhere.
    const at::Tensor mine =
        at::tensor(std::vector<int64_t>{query.size(0), query.size(1), query.size(2), key.size(2),
                                        query.size(3)},
                   at::TensorOptions().dtype(at::kLong).device(query.device()));
    at::Tensor all = at::empty({s.size * mine.numel()}, mine.options());
    Pending op = s.world->all_gather(all, mine);
    s.world->wait(op);
    const at::Tensor shapes = all.view({s.size, mine.numel()}).cpu();
    for (int r = 0; r < s.size; ++r) {
      if (!at::equal(shapes[r], shapes[s.rank])) {
        std::ostringstream lengths;
        for (int i = 0; i < s.size; ++i) lengths << (i ? ", " : "") << shapes[i][1].item<int64_t>();
        throw UnevenShards(
            "Context parallelism needs slices of equal shape on every rank; rank " +
            std::to_string(r) + " has (B, S, H, H_kv, D) = " + shape_text(shapes[r]) +
            " and this rank " + std::to_string(s.rank) + " " + shape_text(shapes[s.rank]) +
            " (sequence lengths per rank: " + lengths.str() +
            "). Uneven slices are refused, not padded: make the sequence length a multiple "
            "of the world size (shard() refuses one that is not).");
      }
    }
  }
  const bool fp32 = s.config.convert_to_fp32;
  at::Tensor out;
  if (!s.ulysses) {
    out = ring_attention(*s.ring, query, key, value, named, fp32);
  } else if (!s.ring) {
    out = ulysses_attention(*s.ulysses, query, key, value, named,
                            [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const attention::AttentionOptions& o) {
                              return attention::dispatch_attention(q, k, v, o);
                            });
  } else {
    out = ulysses_attention(*s.ulysses, query, key, value, named,
                            [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const attention::AttentionOptions& o) {
                              return ring_attention(*s.ring, q, k, v, o, fp32);
                            });
  }
  s.stats.calls += 1;
  s.stats.total_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

at::Tensor ContextParallel::shard(const at::Tensor& full) const {
  const State& s = *state_;
  const int64_t dim = s.config.split_dim < 0 ? s.config.split_dim + full.dim() : s.config.split_dim;
  if (dim < 0 || dim >= full.dim()) {
    throw InvalidConfig("split_dim " + std::to_string(s.config.split_dim) +
                        " is not a dimension of a tensor of shape " + shape_text(full) + ".");
  }
  const int64_t length = full.size(dim);
  if (length % s.size != 0) {
    throw UnevenShards("Cannot split dimension " + std::to_string(dim) + " of length " +
                       std::to_string(length) + " evenly over " + std::to_string(s.size) +
                       " ranks: uneven slices are refused, not padded. Make the sequence "
                       "length a multiple of " +
                       std::to_string(s.size) + ".");
  }
  const int64_t local = length / s.size;
  return full.narrow(dim, s.rank * local, local).contiguous();
}

at::Tensor ContextParallel::gather(const at::Tensor& local) {
  State& s = *state_;
  const int64_t dim =
      s.config.split_dim < 0 ? s.config.split_dim + local.dim() : s.config.split_dim;
  const at::Tensor in = local.contiguous();
  at::Tensor all = at::empty({s.size * in.numel()}, in.options());
  Pending op = s.world->all_gather(all, in.view(-1));
  s.world->wait(op);
  std::vector<int64_t> sizes{s.size};
  sizes.insert(sizes.end(), in.sizes().begin(), in.sizes().end());
  return at::cat(all.view(sizes).unbind(0), dim);
}

const ContextParallelConfig& ContextParallel::config() const { return state_->config; }
int ContextParallel::rank() const { return state_->rank; }
int ContextParallel::world_size() const { return state_->size; }

CommStats ContextParallel::stats() const {
  CommStats out = state_->stats;
  out.comm_seconds = state_->counters.comm_seconds;
  out.bytes_sent = state_->counters.bytes_sent;
  return out;
}

void ContextParallel::reset_stats() {
  state_->stats = {};
  state_->counters = {};
}

std::shared_ptr<ContextParallel> make_context_parallel(ContextParallelConfig config,
                                                       const ProcessGroup& group) {
  return std::make_shared<ContextParallel>(config, group);
}

ProcessGroup::ProcessGroup(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::size() const { return impl_->size; }
std::string ProcessGroup::backend_name() const { return impl_->name; }

}  // namespace kernelhub::parallel
