// Definitions of training/extensions/timeline_trace.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <utility>

#include "ppe/training/extensions/timeline_trace.hpp"

namespace ppe::training::extensions {

PPE_DECL TimelineTrace::TimelineTrace(TimelineTraceOptions options)
    : trigger_(options.trigger()),
      filename_(std::move(options.filename())),
      enable_(std::move(options.enable())),
      disable_(std::move(options.disable())),
      tracer_(std::move(options.tracer())),
      writer_(std::move(options.writer())) {
  if (filename_.empty()) throw std::invalid_argument("ppe::TimelineTrace: the filename is empty");
  if (!tracer_)  // the process-wide one: never destroyed, so not owned
    tracer_ = std::shared_ptr<profiler::Tracer>(&profiler::get_tracer(), [](profiler::Tracer*) {});
}

PPE_DECL void TimelineTrace::initialize(Manager& m) { tracer_->initialize_writer(filename_, m.writer_for(writer_)); }

PPE_DECL void TimelineTrace::flush(Manager& m) { tracer_->flush(filename_, m.writer_for(writer_)); }

PPE_DECL void TimelineTrace::finalize(Manager& m) {
  flush(m);
  if (writer_) writer_->finalize();
  tracer_->finalize();
}

PPE_DECL State TimelineTrace::state_dict() const {
  State s = State::dict();
  s.set("_trigger", trigger_.state_dict());
  s.set("_tracer", tracer_->state_dict());
  if (enable_) s.set("_enable_trigger", enable_->state_dict());
  if (disable_) s.set("_disable_trigger", disable_->state_dict());
  return s;
}

PPE_DECL void TimelineTrace::load_state_dict(const State& s) {
  const State& tracer = s.at("_tracer");
  if (const State* t = s.find("_trigger")) trigger_.load_state_dict(*t);
  if (const State* t = s.find("_enable_trigger"); t && enable_) enable_->load_state_dict(*t);
  if (const State* t = s.find("_disable_trigger"); t && disable_) disable_->load_state_dict(*t);
  tracer_->load_state_dict(tracer);
}

PPE_DECL TimelineTrace::TimelineTrace(TimelineTrace&&) noexcept = default;
PPE_DECL TimelineTrace& TimelineTrace::operator=(TimelineTrace&&) noexcept = default;
PPE_DECL TimelineTrace::~TimelineTrace() = default;

}  // namespace ppe::training::extensions
