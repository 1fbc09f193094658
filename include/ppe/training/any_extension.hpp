#pragma once
/// \file
/// `AnyExtension`: a type-erased extension (as `torch::nn::AnyModule`), for
/// extension lists decided at run time (configuration files, plugins) and for
/// `Manager::extend`.

#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extension_entry.hpp"
#include "ppe/training/triggers/any_trigger.hpp"

namespace ppe::training {

namespace detail {
/// A unique address per type, comparable across translation units.
template <class T>
const void* type_id() noexcept {
  static const char id = 0;
  return &id;
}
}  // namespace detail

/// Holds any extension and its static traits behind virtual calls.
class AnyExtension {
 public:
  template <class E>
    requires(!std::is_same_v<std::remove_cvref_t<E>, AnyExtension> &&
             !detail::is_entry<std::remove_cvref_t<E>>::value)
  AnyExtension(E&& ext) {
    using D = std::remove_cvref_t<E>;
    static_assert(detail::check_extension<D>::value);
    using Tr = extension_traits<D>;
    p_ = std::make_unique<Model<D>>(std::forward<E>(ext));
    name_ = std::string(Tr::default_name());
    priority_ = Tr::priority();
    needs_model_state_ = Tr::needs_model_state();
    trigger_ = std::make_unique<triggers::AnyTrigger>(Tr::default_trigger());
  }
  AnyExtension(AnyExtension&&) noexcept = default;
  AnyExtension& operator=(AnyExtension&&) noexcept = default;

  void operator()(Manager& m) { p_->call(m); }
  void initialize(Manager& m) { p_->initialize(m); }
  void finalize(Manager& m) { p_->finalize(m); }
  void on_error(Manager& m, std::exception_ptr ex) { p_->on_error(m, ex); }
  void on_stop(Manager& m) { p_->on_stop(m); }
  State state_dict() const { return p_->state_dict(); }
  void load_state_dict(const State& s) { p_->load_state_dict(s); }

  /// The held type's static traits.
  const std::string& default_name() const noexcept { return name_; }
  int priority() const noexcept { return priority_; }
  bool needs_model_state() const noexcept { return needs_model_state_; }
  triggers::AnyTrigger default_trigger() const { return *trigger_; }

  /// The held extension if it is an `E`, else nullptr.
  template <class E>
  E* target() noexcept {
    return p_->type() == detail::type_id<E>() ? static_cast<E*>(p_->get()) : nullptr;
  }
  const void* type() const noexcept { return p_->type(); }
  void* get() noexcept { return p_->get(); }
  std::string_view type_name() const noexcept { return p_->type_name(); }
  /// The held extension's `consumed_keys_of`.
  std::vector<std::string> consumed_keys() const { return p_->consumed_keys(); }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual void call(Manager&) = 0;
    virtual void initialize(Manager&) = 0;
    virtual void finalize(Manager&) = 0;
    virtual void on_error(Manager&, std::exception_ptr) = 0;
    virtual void on_stop(Manager&) = 0;
    virtual State state_dict() const = 0;
    virtual void load_state_dict(const State&) = 0;
    virtual const void* type() const noexcept = 0;
    virtual void* get() noexcept = 0;
    virtual std::string_view type_name() const noexcept = 0;
    virtual std::vector<std::string> consumed_keys() const = 0;
  };
  template <class E>
  struct Model final : Concept {
    template <class U>
    explicit Model(U&& u) : e(std::forward<U>(u)) {}
    void call(Manager& m) override { call_extension(e, m); }
    void initialize(Manager& m) override { initialize_extension(e, m); }
    void finalize(Manager& m) override { finalize_extension(e, m); }
    void on_error(Manager& m, std::exception_ptr ex) override { extension_on_error(e, m, ex); }
    void on_stop(Manager& m) override { extension_on_stop(e, m); }
    State state_dict() const override { return extension_state_dict(e); }
    void load_state_dict(const State& s) override { extension_load_state_dict(e, s); }
    const void* type() const noexcept override { return detail::type_id<E>(); }
    void* get() noexcept override { return &e; }
    std::string_view type_name() const noexcept override { return detail::type_name<E>(); }
    std::vector<std::string> consumed_keys() const override { return consumed_keys_of(e); }
    E e;
  };

  std::unique_ptr<Concept> p_;
  std::string name_;
  int priority_ = kPriorityReader;
  bool needs_model_state_ = false;
  std::unique_ptr<triggers::AnyTrigger> trigger_;
};

}  // namespace ppe::training
