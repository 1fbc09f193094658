#pragma once
/// \file
/// `ppe::reporting::Observation`: the ordered key → Value map of one iteration
/// (PPE's `manager.observation` dictionary).

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/reporting/value.hpp"

namespace ppe::reporting {

/// An insertion-ordered map from report keys to values.
///
/// `clear()` keeps every key it has seen in a slot for reuse, so an iteration
/// that reports the same keys as the previous one allocates nothing.
class Observation {
 public:
  /// One entry seen through iteration: the key and its value.
  template <class V>
  struct EntryRef {
    const std::string& key;
    V& value;
  };

  Observation() = default;
  Observation(std::initializer_list<std::pair<std::string_view, Value>> items);

  /// Sets `key` to `value`: overwrites an existing entry in place, else appends.
  Value& set(std::string_view key, Value value) {
    if (Value* v = find(key)) {
      *v = std::move(value);
      return *v;
    }
    std::uint32_t slot = reuse_slot(key);
    slots_[slot].value = std::move(value);
    slots_[slot].live = true;
    order_.push_back(slot);
    return slots_[slot].value;
  }

  /// The value under `key`, or nullptr.
  const Value* find(std::string_view key) const noexcept {
    for (std::uint32_t i : order_)
      if (slots_[i].key == key) return &slots_[i].value;
    return nullptr;
  }
  Value* find(std::string_view key) noexcept {
    return const_cast<Value*>(static_cast<const Observation&>(*this).find(key));
  }
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }

  /// The value under `key`; an error naming the key and the keys present when absent.
  const Value& at(std::string_view key) const;

  /// Removes `key` if present; returns whether it was.
  bool erase(std::string_view key);

  /// Number of key slots held (live and kept for reuse); bounded, see reuse_slot.
  std::size_t slot_count() const noexcept { return slots_.size(); }

  /// Removes every entry; keeps the key slots and capacity (no allocation on refill).
  void clear() noexcept {
    // One inlined test when nothing was reported (every manager iteration clears).
    if (!order_.empty()) clear_entries();
  }

  std::size_t size() const noexcept { return order_.size(); }
  bool empty() const noexcept { return order_.empty(); }

  /// The keys in insertion order.
  std::vector<std::string> keys() const;
  /// The keys as `['a', 'b']`, for error messages.
  std::string keys_text() const;

  /// Every key set since construction, present or not, in first-set order:
  /// the key slots, so keeping this record costs nothing per `set`. Empty
  /// optional once slots of absent keys were dropped (more than 256 distinct
  /// keys, see `new_slot`): the record is then incomplete.
  std::optional<std::vector<std::string>> keys_ever_set() const;

  template <bool Const>
  class Iterator {
    using Owner = std::conditional_t<Const, const Observation, Observation>;
    using V = std::conditional_t<Const, const Value, Value>;

   public:
    Iterator(Owner* o, std::size_t i) : o_(o), i_(i) {}
    EntryRef<V> operator*() const {
      auto& s = o_->slots_[o_->order_[i_]];
      return {s.key, s.value};
    }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return i_ == other.i_; }

   private:
    Owner* o_;
    std::size_t i_;
  };
  Iterator<true> begin() const { return {this, 0}; }
  Iterator<true> end() const { return {this, order_.size()}; }
  Iterator<false> begin() { return {this, 0}; }
  Iterator<false> end() { return {this, order_.size()}; }

 private:
  struct Slot {
    std::string key;
    Value value;
    bool live = false;
  };

  [[gnu::noinline]] void clear_entries() noexcept {
    for (std::uint32_t i : order_) {
      slots_[i].value = Value();  // releases tensors and callables now
      slots_[i].live = false;
    }
    order_.clear();
  }

  std::uint32_t reuse_slot(std::string_view key) {
    for (std::uint32_t i = 0; i < slots_.size(); ++i)
      if (!slots_[i].live && slots_[i].key == key) return i;
    return new_slot(key);
  }
  // A key with no free slot: a new one (out of line: not the common path).
  std::uint32_t new_slot(std::string_view key);
  void drop_dead_slots();

  static constexpr std::size_t kCompactAt = 256;

  std::vector<Slot> slots_;
  std::vector<std::uint32_t> order_;
  bool dropped_keys_ = false;  // drop_dead_slots forgot some key
};

/// The observation's entries with their values as host doubles, in order:
/// the tensors among them read in one transfer per device (`to_doubles`).
PPE_DECL std::vector<std::pair<std::string, double>> to_doubles(const Observation& observation);

}  // namespace ppe::reporting

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/reporting/impl/observation.ipp"
#endif
