// Definitions of training/extensions/accumulate/accumulate_base.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/scalar_tensor.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/training/extensions/accumulate/accumulate_base.hpp"

namespace ppe::training::extensions::accumulate::detail {

// The layout: the magic, then per item the key (u32 length, bytes), a tag
// byte and the value: nothing (None), a byte (bool), 8 bytes (int64, double),
// u32 length + bytes (string), or a dtype byte + a double (tensor). Native
// byte order: every rank of a run is the same build on the same kind of host.
inline constexpr std::string_view kGatherMagic = "ppe-accumulate-state-1";
enum class GatherTag : char { None, Bool, Int, Double, String, Tensor };

template <class T>
void put_raw(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

PPE_DECL std::string encode_state(const State& s) {
  if (!s.is_dict())
    throw std::invalid_argument("ppe: an accumulate summary's state must be a dict to be gathered, got a " +
                                std::string(State::kind_name(s.kind())));
  std::string out(kGatherMagic);
  for (const auto& [key, v] : s.as_dict()) {
    put_raw(out, static_cast<std::uint32_t>(key.size()));
    out += key;
    switch (v.kind()) {
      case State::Kind::None: out += static_cast<char>(GatherTag::None); break;
      case State::Kind::Bool:
        out += static_cast<char>(GatherTag::Bool);
        out += static_cast<char>(v.as_bool());
        break;
      case State::Kind::Int:
        out += static_cast<char>(GatherTag::Int);
        put_raw(out, v.as_int());
        break;
      case State::Kind::Double:
        out += static_cast<char>(GatherTag::Double);
        put_raw(out, v.as_double());
        break;
      case State::Kind::String:
        out += static_cast<char>(GatherTag::String);
        put_raw(out, static_cast<std::uint32_t>(v.as_string().size()));
        out += v.as_string();
        break;
      case State::Kind::Tensor: {
        const at::Tensor& t = v.as_tensor();
        if (!t.defined() || t.numel() != 1)
          throw std::invalid_argument("ppe: an accumulate summary's state to gather holds a tensor under '" + key +
                                      "' that is not a single value");
        out += static_cast<char>(GatherTag::Tensor);
        out += static_cast<char>(t.scalar_type());
        put_raw(out, t.item<double>());  // reads a device value: the gather is a synchronisation point anyway
        break;
      }
      default:
        throw std::invalid_argument("ppe: an accumulate summary's state to gather holds a " +
                                    std::string(State::kind_name(v.kind())) + " under '" + key +
                                    "'; only numbers, strings, bools, None and one-element tensors are gathered");
    }
  }
  return out;
}

PPE_DECL State decode_state(const std::string& bytes, std::string_view source) {
  std::size_t pos = 0;
  auto fail = [&]() -> std::runtime_error {
    return std::runtime_error("ppe: " + std::string(source) + " is not an accumulate summary's state (" +
                              std::to_string(bytes.size()) + " bytes, unreadable at byte " + std::to_string(pos) + ")");
  };
  auto take = [&](std::size_t n) {
    if (bytes.size() - pos < n) throw fail();
    const char* p = bytes.data() + pos;
    pos += n;
    return p;
  };
  auto get = [&]<class T>(T*) {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  };
  if (std::string_view(take(kGatherMagic.size()), kGatherMagic.size()) != kGatherMagic) throw fail();
  State s = State::dict();
  while (pos < bytes.size()) {
    const auto key_size = get(static_cast<std::uint32_t*>(nullptr));
    const std::string key(take(key_size), key_size);
    switch (static_cast<GatherTag>(*take(1))) {
      case GatherTag::None: s.set(key, State()); break;
      case GatherTag::Bool: s.set(key, State(*take(1) != 0)); break;
      case GatherTag::Int: s.set(key, State(get(static_cast<std::int64_t*>(nullptr)))); break;
      case GatherTag::Double: s.set(key, State(get(static_cast<double*>(nullptr)))); break;
      case GatherTag::String: {
        const auto n = get(static_cast<std::uint32_t*>(nullptr));
        s.set(key, State(std::string(take(n), n)));
        break;
      }
      case GatherTag::Tensor: {
        const auto dtype = static_cast<at::ScalarType>(*take(1));
        if (dtype < at::ScalarType::Byte || dtype >= at::ScalarType::NumOptions) throw fail();
        const double v = get(static_cast<double*>(nullptr));
        s.set(key, State(at::scalar_tensor(v, at::TensorOptions().dtype(dtype))));
        break;
      }
      default: throw fail();
    }
  }
  return s;
}

PPE_DECL std::vector<State> all_gather_states(Communicator& communicator, const State& local) {
  const std::vector<std::string> all = communicator.all_gather(encode_state(local));
  std::vector<State> states;
  states.reserve(all.size());
  for (std::size_t r = 0; r < all.size(); ++r)
    states.push_back(decode_state(all[r], "the summary gathered from rank " + std::to_string(r)));
  return states;
}

}  // namespace ppe::training::extensions::accumulate::detail
