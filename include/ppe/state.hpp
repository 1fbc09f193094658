#pragma once
/// \file
/// `ppe::State`: the one nested state type of the library (the C++ form of the
/// Python dictionaries that `state_dict()` returns).
///
/// A State is None, a bool, an integer, a double, a string, a tensor, a list of
/// States or an insertion-ordered dictionary of States. Dictionary keys are
/// strings, or integers for a dictionary made by `State::int_dict()` (Python's
/// `{0: ...}`, e.g. an optimizer's per-parameter `state`); integer keys are
/// held and looked up as their decimal text and written back as integers. Manager,
/// extension and trigger state is built from it, and `ppe/serialization.hpp`
/// writes it in the pickle format that Python's `torch.load` reads.
///
/// The header needs no LibTorch header: tensors are held through a forward
/// declaration and only touched by templates, which are instantiated where the
/// caller has `at::Tensor` complete.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ppe/detail/config.hpp"

namespace at {
class Tensor;
}  // namespace at

namespace ppe {

/// Error raised by State accessors when the held kind or a key is not what the
/// caller expected. The message names the key and the kinds involved.
class StateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What a state taken from live objects does with their tensors (an
/// optimizer's state, `ppe::serialization::optimizer_state_dict`,
/// `Manager::state_dict`; a model's parameters are always handles, as in
/// PyTorch's `state_dict()`).
enum class StateCopy {
  /// Copies them, so that later steps cannot reach the state taken (the default).
  Clone,
  /// Shares them (Python's `Optimizer.state_dict()`): no copy, and the state
  /// changes with the objects. For a state written before training goes on,
  /// as a synchronous snapshot is.
  Share,
};

class State {
 public:
  enum class Kind { None, Bool, Int, Double, String, Tensor, List, Dict };
  using List = std::vector<State>;
  using Item = std::pair<std::string, State>;
  using Dict = std::vector<Item>;  // insertion order, keys unique

  /// None.
  State() = default;
  // Out of line with separate compilation: the variant's copy, move and
  // destruction code is then compiled once, not in every translation unit.
  State(const State& other);
  State(State&& other) noexcept;
  State& operator=(const State& other);
  State& operator=(State&& other) noexcept;
  ~State();
  State(std::nullptr_t) {}
  State(bool v) : v_(v) {}
  /// Any integer type (but not bool or char) becomes an Int.
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool> && !std::is_same_v<I, char>)
  State(I v) : v_(static_cast<std::int64_t>(v)) {}
  State(double v) : v_(v) {}
  State(float v) : v_(static_cast<double>(v)) {}
  State(std::string v) : v_(std::move(v)) {}
  State(const char* v) : v_(std::string(v)) {}
  State(std::string_view v) : v_(std::string(v)) {}
  State(List v) : v_(Box<List>(std::move(v))) {}
  State(Dict v) : v_(DictBox(std::move(v))) {}
  /// A tensor (stored by handle; no copy of its data).
  template <class T>
    requires std::is_same_v<std::remove_cvref_t<T>, at::Tensor>
  State(T&& t) : v_(make_tensor_handle(std::forward<T>(t))) {}

  /// An empty dictionary (`State()` is None, not an empty dictionary).
  static State dict() { return State(Dict{}); }
  /// A dictionary from key/value pairs, in the given order.
  static State dict(std::initializer_list<Item> items);
  static State list(List items = {}) { return State(std::move(items)); }
  /// An empty dictionary whose keys are integers, given to `set` as decimal
  /// text (`set("3", v)`); pickled with integer keys, so that Python sees
  /// `{3: v}` (an optimizer's `state` must have them: Python's
  /// `Optimizer.load_state_dict` ignores string ids).
  static State int_dict() {
    State s = dict();
    std::get<DictBox>(s.v_).int_keys = true;
    return s;
  }
  /// Whether this is a dictionary made by `int_dict()` (integer keys).
  bool has_int_keys() const noexcept {
    const auto* d = std::get_if<DictBox>(&v_);
    return d && d->int_keys;
  }

  Kind kind() const noexcept { return static_cast<Kind>(v_.index()); }
  bool is_none() const noexcept { return kind() == Kind::None; }
  bool is_bool() const noexcept { return kind() == Kind::Bool; }
  bool is_int() const noexcept { return kind() == Kind::Int; }
  bool is_double() const noexcept { return kind() == Kind::Double; }
  /// Int or Double.
  bool is_number() const noexcept { return is_int() || is_double(); }
  bool is_string() const noexcept { return kind() == Kind::String; }
  bool is_tensor() const noexcept { return kind() == Kind::Tensor; }
  bool is_list() const noexcept { return kind() == Kind::List; }
  bool is_dict() const noexcept { return kind() == Kind::Dict; }

  bool as_bool() const { return get<bool>(Kind::Bool); }
  std::int64_t as_int() const { return get<std::int64_t>(Kind::Int); }
  /// A Double, or an Int converted to double.
  double as_double() const {
    if (is_int()) return static_cast<double>(as_int());
    return get<double>(Kind::Double);
  }
  const std::string& as_string() const { return get<std::string>(Kind::String); }
  const List& as_list() const { return *get<Box<List>>(Kind::List).p; }
  List& as_list() { return *get<Box<List>>(Kind::List).p; }
  const Dict& as_dict() const { return *get<DictBox>(Kind::Dict).p; }
  Dict& as_dict() { return *get<DictBox>(Kind::Dict).p; }
  /// The tensor. A template only so that this header needs no LibTorch header.
  template <class T = at::Tensor>
  const T& as_tensor() const {
    return *get<TensorHandle>(Kind::Tensor).p;
  }

  // ---- dictionary access -------------------------------------------------
  /// Whether this is a dictionary holding `key`.
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  /// The value under `key`, or nullptr when absent (or when this is no dictionary).
  const State* find(std::string_view key) const {
    if (!is_dict()) return nullptr;
    for (const auto& [k, v] : as_dict())
      if (k == key) return &v;
    return nullptr;
  }
  State* find(std::string_view key) {
    return const_cast<State*>(static_cast<const State&>(*this).find(key));
  }
  /// The value under `key`; a StateError naming the key and the keys present
  /// when it is missing.
  const State& at(std::string_view key) const {
    if (const State* s = find(key)) return *s;
    throw StateError(missing_key_message(key));
  }
  State& at(std::string_view key) {
    return const_cast<State&>(static_cast<const State&>(*this).at(key));
  }
  /// Sets `key` (replacing its value in place, or appending it). Turns None
  /// into an empty dictionary first.
  State& set(std::string_view key, State value);
  /// Removes `key` from a dictionary and returns its value; nullopt when
  /// absent (or when this is no dictionary). PPE's `dict.pop(key, None)`.
  std::optional<State> pop(std::string_view key);
  /// Number of entries of a dictionary or a list.
  std::size_t size() const;

  static std::string_view kind_name(Kind k) noexcept {
    constexpr std::string_view names[] = {"None", "bool", "int", "double", "string", "tensor", "list", "dict"};
    return names[static_cast<int>(k)];
  }

  /// Structural equality. Tensors compare equal when they are the same tensor
  /// (handles to one TensorImpl, as Python's `is`); compare tensor contents
  /// with `ppe::serialization::state_equal` (serialization.hpp).
  friend bool operator==(const State& a, const State& b) {
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
      case Kind::None: return true;
      case Kind::Bool: return a.as_bool() == b.as_bool();
      case Kind::Int: return a.as_int() == b.as_int();
      case Kind::Double: return a.as_double() == b.as_double();
      case Kind::String: return a.as_string() == b.as_string();
      case Kind::Tensor:
        return std::get<TensorHandle>(a.v_).impl == std::get<TensorHandle>(b.v_).impl;
      case Kind::List: return a.as_list() == b.as_list();
      case Kind::Dict: return a.has_int_keys() == b.has_int_keys() && a.as_dict() == b.as_dict();
    }
    return false;
  }

 private:
  // Deep-copying box: lets the variant hold the recursive containers while
  // State keeps value semantics.
  template <class T>
  struct Box {
    std::unique_ptr<T> p;
    explicit Box(T v) : p(std::make_unique<T>(std::move(v))) {}
    Box(const Box& o) : p(std::make_unique<T>(*o.p)) {}
    Box(Box&&) noexcept = default;
    Box& operator=(const Box& o) {
      p = std::make_unique<T>(*o.p);
      return *this;
    }
    Box& operator=(Box&&) noexcept = default;
  };
  struct DictBox : Box<Dict> {
    using Box<Dict>::Box;
    bool int_keys = false;
  };
  static bool is_integer_text(std::string_view k) noexcept {
    if (!k.empty() && k.front() == '-') k.remove_prefix(1);
    if (k.empty() || k.size() > 18) return false;
    for (char c : k)
      if (c < '0' || c > '9') return false;
    return true;
  }
  struct TensorHandle {
    std::shared_ptr<at::Tensor> p;
    const void* impl;  ///< the TensorImpl: the tensor's identity
  };
  template <class T>
  static TensorHandle make_tensor_handle(T&& t) {
    auto p = std::make_shared<at::Tensor>(std::forward<T>(t));
    const void* impl = p->unsafeGetTensorImpl();
    return TensorHandle{std::move(p), impl};
  }

  template <class T>
  const T& get(Kind want) const {
    if (kind() != want) kind_error(want);
    return std::get<T>(v_);
  }
  [[noreturn]] void kind_error(Kind want) const;
  template <class T>
  T& get(Kind want) {
    return const_cast<T&>(static_cast<const State&>(*this).get<T>(want));
  }
  std::string missing_key_message(std::string_view key) const;

  std::variant<std::monostate, bool, std::int64_t, double, std::string, TensorHandle, Box<List>, DictBox> v_;
};

}  // namespace ppe

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/impl/state.ipp"
#endif
