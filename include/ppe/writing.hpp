#pragma once
/// \file
/// Writers (PPE's `ppe.writing`): where extensions put their files.

#include "ppe/writing/process_queue_writer.hpp"
#include "ppe/writing/process_writer.hpp"
#include "ppe/writing/simple_writer.hpp"
#include "ppe/writing/thread_queue_writer.hpp"
#include "ppe/writing/thread_writer.hpp"
#include "ppe/writing/writer.hpp"
