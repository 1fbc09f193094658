#pragma once
/// \file
/// `ppe::engine::create_trainer` and `create_evaluator` (PPE's `ppe.engine`):
/// build a statically typed `Trainer` / `Evaluator` from models, optimizers,
/// options and policy objects.
///
/// ```cpp
/// namespace ext = ppe::training::extensions;
/// ppe::to(model, "cpu");
/// auto trainer = ppe::engine::create_trainer(
///     model, optimizer, /*max_epochs=*/10, ppe::engine::TrainerOptions().out_dir("result"),
///     ppe::engine::create_evaluator(model),          // every epoch, named "Evaluator"
///     ext::LogReport(), ext::PrintReport({"epoch", "train/loss", "val/loss"}));
/// trainer.run(train_loader, val_loader);
/// ```
///
/// The arguments after the options: `<ppe/engine/create_trainer.hpp>` and
/// `<ppe/engine/create_evaluator.hpp>`; the tagged ones (`with_logic`,
/// `evaluate`, ...) are in `<ppe/engine/arguments.hpp>`.
///
/// A single model is given as its typed handle (the default logic calls its
/// `forward`); several models as `ppe::training::Models{{"gen", g}, {"dis", d}}`
/// with a logic of your own (LibTorch's `forward` is not virtual, so the
/// logic keeps the typed handles).
///
/// This header only includes the engine's parts, one concept each:
/// `options.hpp` (`TrainerOptions`, `EvaluatorOptions`), `trainer.hpp` and
/// `evaluator.hpp` (the loops), `arguments.hpp`, `create_trainer.hpp`,
/// `create_evaluator.hpp`.

#include "ppe/engine/arguments.hpp"
#include "ppe/engine/create_evaluator.hpp"
#include "ppe/engine/create_trainer.hpp"
#include "ppe/engine/evaluator.hpp"
#include "ppe/engine/options.hpp"
#include "ppe/engine/trainer.hpp"
