#pragma once
/// \file
/// Options of `ppe::engine::create_trainer` and `create_evaluator` (PPE's
/// keyword arguments and its `options` / `runtime_options` dictionaries).
///
/// PPE's free-form `options` dict is split: the keys the default logic and
/// handler know are typed fields (`logic`, `handler`); `options` stays a
/// free-form dict for the keys of custom logic and handler types (each pops
/// its keys in `consume_options`, and a key nobody takes is an error, as in
/// PPE). The default logic and handler also accept PPE's key names there.

#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/handler/handler.hpp"
#include "ppe/training/communicator.hpp"
#include "ppe/handler/logic.hpp"
#include "ppe/runtime/device_spec.hpp"
#include "ppe/runtime/runtime_options.hpp"
#include "ppe/state.hpp"
#include "ppe/training/metrics.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::profiler {
class Profile;  // ppe/profiler/profile.hpp (included by trainer.hpp and evaluator.hpp)
}  // namespace ppe::profiler

namespace ppe::engine {

/// Options of `create_trainer`.
struct TrainerOptions {
  /// Output directory of writers (PPE's `out_dir`).
  PPE_ARG(std::string, out_dir) = "result";
  /// Where extensions write (PPE's `writer`); null: a SimpleWriter(out_dir).
  PPE_ARG(std::shared_ptr<writing::Writer>, writer);
  /// Seconds on a monotonic clock (elapsed time, the per-iteration
  /// `elapsed_time` report); replace it to make them deterministic.
  PPE_ARG(std::function<double()>, clock);
  /// The device of the entry runtime, which converts batches (PPE's `device`).
  PPE_ARG(runtime::DeviceSpec, device) = runtime::DeviceSpec("cpu");
  /// Options of the entry runtime (PPE's `runtime_options`).
  PPE_ARG(runtime::RuntimeOptions, runtime_options);
  /// Options of the default logic (PPE's logic keys of `options`).
  PPE_ARG(handler::LogicOptions, logic);
  /// Options of the handler (PPE's handler keys of `options`).
  PPE_ARG(handler::HandlerOptions, handler);
  /// Free-form options for the `consume_options` of the handler and logic
  /// (PPE's `options`); keys left over are an error.
  PPE_ARG(State, options) = State::dict();
  /// Process rank and world size (distributed training).
  PPE_ARG(int, rank) = 0;
  PPE_ARG(int, world_size) = 1;
  /// The ranks' collectives (`training::ManagerOptions::communicator`;
  /// `ppe::distributed::for_process_group(options)` sets it).
  PPE_ARG(std::shared_ptr<training::Communicator>, communicator);
  /// `training::ManagerOptions::check_report_keys`: at the end of the run, a
  /// warning about every key an extension or trigger reads that was never reported.
  PPE_ARG(bool, check_report_keys) = true;
  /// A LibTorch profiler session (PPE's `profile`, a `torch.profiler.profile`):
  /// started when `run` starts training, stepped after every iteration,
  /// stopped when the run ends, after its trace handler was cleared (PPE's
  /// `on_trace_ready = None`: a trace still recording then is not handed
  /// to it). See docs/profile.md.
  PPE_ARG(std::shared_ptr<profiler::Profile>, profile);
  /// Record the trainer's scopes (`ppe.training.Trainer:iteration`,
  /// `:get_data`, `:run_iteration`, `pytorch_pfn_extras.training.Trainer:train_step`)
  /// with `ppe::profiler::Record`: a LibTorch profiler range each and a
  /// TimeSummary entry (PPE's `enable_profile`). Unset: whether `profile`
  /// is given (PPE's `kwargs.get("enable_profile", profile is not None)`).
  /// The manager's own `enable_profile` (its extensions' scopes) takes the
  /// value given here, false when unset, as PPE passes it on only when given.
  PPE_ARG(std::optional<bool>, enable_profile);
  /// Add the trainer's and the manager's scopes to the Chrome tracer
  /// (`ppe::profiler::get_tracer()`; PPE's `enable_trace`).
  PPE_ARG(bool, enable_trace) = false;
};

/// Options of `create_evaluator`.
struct EvaluatorOptions {
  /// See TrainerOptions.
  PPE_ARG(runtime::DeviceSpec, device) = runtime::DeviceSpec("cpu");
  PPE_ARG(runtime::RuntimeOptions, runtime_options);
  PPE_ARG(handler::LogicOptions, logic);
  PPE_ARG(handler::HandlerOptions, handler);
  PPE_ARG(State, options) = State::dict();
  /// Shows the progress of each evaluation pass (PPE's `progress_bar`).
  PPE_ARG(bool, progress_bar) = false;
  /// The progress bar's stream; not owned, must outlive the evaluator.
  using OStreamPtr = std::ostream*;  // PPE_ARG spells `const T&`: a pointer type needs a name
  PPE_ARG(OStreamPtr, out) = &std::cout;
  /// Forces the progress bar's terminal display (true) or line display
  /// (false); unset: decided from the stream.
  PPE_ARG(std::optional<bool>, terminal);
  /// Seconds on a monotonic clock for the progress bar; null: steady_clock.
  PPE_ARG(std::function<double()>, clock);
  /// The reducer of keys without their own (mean, as PPE).
  PPE_ARG(training::metrics::Reducer, default_reducer) = training::metrics::Reducer::mean();
  /// Distributed evaluation: combines the ranks' per-batch observations before
  /// they are reduced (`ppe::distributed::distributed_evaluation` sets it;
  /// empty: this process's only).
  PPE_ARG(training::metrics::Gather, gather);
  /// A LibTorch profiler session (PPE's `profile`): started when a `run`
  /// starts its loop, stepped after every batch, stopped at its end (its
  /// trace handler is called then if it records). Do not give a trainer's
  /// evaluator a session while the trainer's records: one LibTorch profiler
  /// records per thread (the trainer's session covers the evaluation).
  PPE_ARG(std::shared_ptr<profiler::Profile>, profile);

 public:
  /// Reduces the per-batch values of `key` with `reducer` (Determined's
  /// reducers) instead of averaging them. Setting a key twice replaces it.
  EvaluatorOptions& reducer(std::string key, training::metrics::Reducer reducer) {
    reducers_.set(std::move(key), std::move(reducer));
    return *this;
  }
  const std::vector<training::metrics::ReducerList::Item>& reducers() const noexcept { return reducers_.items(); }

 private:
  training::metrics::ReducerList reducers_;
};

}  // namespace ppe::engine
