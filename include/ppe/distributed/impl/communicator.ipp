// Definitions of distributed/communicator.hpp: included by it when
// header-only, compiled once by impl/distributed_src.hpp with
// PPE_SEPARATE_COMPILATION.
// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).
#pragma once

#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "ppe/distributed/communicator.hpp"
#include "ppe/distributed/process_group.hpp"
#include "ppe/serialization/pickle.hpp"

namespace ppe::distributed {

PPE_DECL std::vector<std::string> all_gather_bytes(const std::string& bytes) {
  auto group = default_process_group();
  const int world = group->getSize();
  std::vector<std::vector<at::Tensor>> sizes_out(1);
  for (int r = 0; r < world; ++r) sizes_out[0].push_back(at::empty({1}, at::kLong));
  std::vector<at::Tensor> size_in{at::tensor({static_cast<std::int64_t>(bytes.size())}, at::kLong)};
  group->allgather(sizes_out, size_in)->wait();
  std::int64_t longest = 1;  // Gloo cannot gather empty tensors
  for (const auto& t : sizes_out[0]) longest = std::max(longest, t.item<std::int64_t>());

  at::Tensor mine = at::zeros({longest}, at::kByte);
  if (!bytes.empty()) std::memcpy(mine.data_ptr(), bytes.data(), bytes.size());
  std::vector<std::vector<at::Tensor>> bytes_out(1);
  for (int r = 0; r < world; ++r) bytes_out[0].push_back(at::empty({longest}, at::kByte));
  std::vector<at::Tensor> bytes_in{mine};
  group->allgather(bytes_out, bytes_in)->wait();

  std::vector<std::string> out;
  for (int r = 0; r < world; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const auto n = static_cast<std::size_t>(sizes_out[0][i].item<std::int64_t>());
    out.emplace_back(static_cast<const char*>(bytes_out[0][i].data_ptr()), n);
  }
  return out;
}

PPE_DECL std::vector<State> all_gather_states(const State& local) {
  const std::vector<char> bytes = ppe::serialization::pickle_dumps(local);
  const std::vector<std::string> ranks = all_gather_bytes(std::string(bytes.begin(), bytes.end()));
  std::vector<State> out;
  out.reserve(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r)
    out.push_back(ppe::serialization::pickle_loads(std::vector<char>(ranks[r].begin(), ranks[r].end()),
                                    "the state gathered from rank " + std::to_string(r)));
  return out;
}

namespace detail {

class ProcessGroupCommunicator final : public training::Communicator {
 public:
  explicit ProcessGroupCommunicator(c10::intrusive_ptr<c10d::ProcessGroup> group) : group_(std::move(group)) {}
  int rank() const override { return group_->getRank(); }
  int world_size() const override { return group_->getSize(); }
  void barrier() override { group_->barrier()->wait(); }
  std::vector<std::string> all_gather(const std::string& bytes) override { return all_gather_bytes(bytes); }
  std::vector<State> all_gather_state(const State& local) override { return all_gather_states(local); }
  std::string lost_ranks_message() override {
    const std::vector<int> lost = lost_ranks();
    if (lost.empty()) return {};
    std::string ranks;
    for (int r : lost) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    return std::string(lost.size() == 1 ? "rank " : "ranks ") + ranks + " of the process group " +
           (lost.size() == 1 ? "is" : "are") + " gone (no heartbeat)";
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
};

}  // namespace detail

PPE_DECL std::shared_ptr<training::Communicator> default_communicator() {
  return std::make_shared<detail::ProcessGroupCommunicator>(default_process_group());
}

}  // namespace ppe::distributed
