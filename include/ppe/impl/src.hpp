#pragma once
/// \file
/// The definitions of ppe's out-of-line functions, for separate compilation
/// (ppe/detail/config.hpp): compile this in exactly one translation unit of
/// a program whose every translation unit defines PPE_SEPARATE_COMPILATION
/// (ppe/impl/src.cpp does just that; Meson's `ppe-separate` dependency links
/// it as a library).

#if !defined(PPE_SEPARATE_COMPILATION)
#error "ppe/impl/src.hpp is for separate compilation: define PPE_SEPARATE_COMPILATION in every TU"
#endif

#include "ppe/detail/impl/named_format.ipp"
#include "ppe/detail/impl/python_format.ipp"
#include "ppe/detail/impl/python_repr.ipp"
#include "ppe/impl/state.ipp"
#include "ppe/optim/lr_scheduler/impl/reduce_lr_on_plateau.ipp"
#include "ppe/reporting/impl/dict_summary.ipp"
#include "ppe/reporting/impl/observation.ipp"
#include "ppe/reporting/impl/summary.ipp"
#include "ppe/reporting/impl/value.ipp"
#include "ppe/serialization/impl/ivalue.ipp"
#include "ppe/serialization/impl/optimizer_state.ipp"
#include "ppe/serialization/impl/pickle.ipp"
#include "ppe/serialization/impl/python_pickle.ipp"
#include "ppe/serialization/impl/seal.ipp"
#include "ppe/serialization/impl/state_copy.ipp"
#include "ppe/training/extensions/accumulate/impl/accumulate_base.ipp"
#include "ppe/training/extensions/accumulate/summary/impl/average_summary.ipp"
#include "ppe/training/extensions/accumulate/summary/impl/extremum_summary.ipp"
#include "ppe/training/extensions/accumulate/summary/impl/standard_deviation_summary.ipp"
#include "ppe/training/extensions/accumulate/summary/impl/summary_base.ipp"
#include "ppe/training/extensions/detail/impl/shift.ipp"
#include "ppe/training/extensions/impl/best_value.ipp"
#include "ppe/training/extensions/impl/exponential_shift.ipp"
#include "ppe/training/extensions/impl/linear_shift.ipp"
#include "ppe/training/extensions/impl/log_format.ipp"
#include "ppe/training/extensions/impl/log_report.ipp"
#include "ppe/training/extensions/impl/micro_average.ipp"
#include "ppe/training/extensions/impl/multistep_shift.ipp"
#include "ppe/training/extensions/impl/polynomial_shift.ipp"
#include "ppe/training/extensions/impl/print_report.ipp"
#include "ppe/training/extensions/impl/progress_bar.ipp"
#include "ppe/training/extensions/impl/snapshot.ipp"
#include "ppe/training/extensions/impl/snapshot_files.ipp"
#include "ppe/training/extensions/impl/step_shift.ipp"
#include "ppe/training/extensions/impl/value_observation.ipp"
#include "ppe/training/extensions/impl/warmup_shift.ipp"
#include "ppe/training/impl/manager.ipp"
#include "ppe/training/impl/models.ipp"
#include "ppe/training/triggers/impl/interval_trigger.ipp"
#include "ppe/writing/impl/writer.ipp"
