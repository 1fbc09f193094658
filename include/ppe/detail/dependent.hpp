#pragma once
/// \file
/// `dependent_t<T, Anchor>`: `T`, spelled so that it depends on the template
/// parameter `Anchor`. Headers that only forward-declare a LibTorch class
/// (`torch::nn::Module`, `torch::optim::Optimizer`) use it to call members in
/// templates: the call is then compiled where the template is instantiated,
/// in a translation unit that includes the class, not in the header.

namespace ppe::detail {

template <class T, class Anchor>
struct dependent {
  using type = T;
};
template <class T, class Anchor>
using dependent_t = typename dependent<T, Anchor>::type;

}  // namespace ppe::detail
