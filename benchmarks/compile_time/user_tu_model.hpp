// The model of the compile-time benchmark's user TUs (user_tu_ppe.cpp and
// user_tu_hand.cpp): one definition, so both compile the same model.
#pragma once

#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr};
  NetImpl() : l1(register_module("l1", torch::nn::Linear(8, 16))), l2(register_module("l2", torch::nn::Linear(16, 1))) {}
  torch::Tensor forward(const torch::Tensor& x) { return l2(torch::relu(l1(x))); }
};
TORCH_MODULE(Net);
