#pragma once
/// \file
/// `AnyTrigger`: a type-erased trigger, for entries decided at run time.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/state.hpp"
#include "ppe/training/trigger.hpp"

namespace ppe::training::triggers {

/// Holds any trigger behind one virtual call (as `torch::nn::AnyModule` holds
/// any module). Copying deep-copies the held trigger.
class AnyTrigger {
 public:
  template <class T>
    requires(!std::is_same_v<std::remove_cvref_t<T>, AnyTrigger> && trigger<std::remove_cvref_t<T>>)
  AnyTrigger(T&& t) : p_(make(std::forward<T>(t))) {}

  AnyTrigger(const AnyTrigger& o) : p_(o.p_->clone()) {}
  AnyTrigger(AnyTrigger&&) noexcept = default;
  AnyTrigger& operator=(const AnyTrigger& o) {
    p_ = o.p_->clone();
    return *this;
  }
  AnyTrigger& operator=(AnyTrigger&&) noexcept = default;

  bool operator()(const Manager& m) { return p_->call(m); }
  bool may_fire(std::int64_t it, std::int64_t len) const { return p_->may_fire(it, len); }
  State state_dict() const { return p_->state_dict(); }
  void load_state_dict(const State& s) { p_->load_state_dict(s); }
  std::optional<TrainingLength> training_length() const { return p_->training_length(); }
  /// The held trigger's `trigger_description`.
  std::string description() const { return p_->description(); }
  /// The held trigger's `consumed_keys_of`.
  std::vector<std::string> consumed_keys() const { return p_->consumed_keys(); }
  bool finished() const { return p_->finished(); }
  /// Whether the held trigger has `next_possible` (may be skipped while quiet).
  bool skippable() const { return p_->skippable(); }
  std::int64_t next_possible(std::int64_t after, std::int64_t len) const { return p_->next_possible(after, len); }

  /// The held trigger if it is a `T`, else nullptr.
  template <class T>
  T* target() noexcept {
    auto* m = dynamic_cast<Model<T>*>(p_.get());
    return m ? &m->t : nullptr;
  }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual std::unique_ptr<Concept> clone() const = 0;
    virtual bool call(const Manager&) = 0;
    virtual bool may_fire(std::int64_t, std::int64_t) const = 0;
    virtual State state_dict() const = 0;
    virtual void load_state_dict(const State&) = 0;
    virtual std::optional<TrainingLength> training_length() const = 0;
    virtual std::string description() const = 0;
    virtual std::vector<std::string> consumed_keys() const = 0;
    virtual bool finished() const = 0;
    virtual bool skippable() const = 0;
    virtual std::int64_t next_possible(std::int64_t, std::int64_t) const = 0;
  };
  template <class T>
  struct Model final : Concept {
    template <class U>
    explicit Model(U&& u) : t(std::forward<U>(u)) {}
    std::unique_ptr<Concept> clone() const override { return std::make_unique<Model>(t); }
    bool call(const Manager& m) override { return static_cast<bool>(t(m)); }
    bool may_fire(std::int64_t it, std::int64_t len) const override { return trigger_may_fire(t, it, len); }
    State state_dict() const override { return trigger_state_dict(t); }
    void load_state_dict(const State& s) override { trigger_load_state_dict(t, s); }
    std::optional<TrainingLength> training_length() const override { return trigger_training_length(t); }
    std::string description() const override { return trigger_description(t); }
    std::vector<std::string> consumed_keys() const override { return consumed_keys_of(t); }
    bool finished() const override { return trigger_finished(t); }
    bool skippable() const override { return trigger_hooks::next_possible<T>; }
    std::int64_t next_possible(std::int64_t after, std::int64_t len) const override {
      return trigger_next_possible(t, after, len);
    }
    T t;
  };

  template <class T>
  static std::unique_ptr<Concept> make(T&& t) {
    static_assert(std::is_copy_constructible_v<std::remove_cvref_t<T>>,
                  "ppe: AnyTrigger copies the trigger it holds (and managers copy their stop trigger); make the "
                  "trigger copyable, e.g. hold shared state through a std::shared_ptr");
    return std::make_unique<Model<std::remove_cvref_t<T>>>(std::forward<T>(t));
  }

  std::unique_ptr<Concept> p_;
};

}  // namespace ppe::training::triggers
