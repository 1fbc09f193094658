#pragma once
/// \file
/// Writers (PPE's `ppe.writing`): where extensions put their files.

#include "ppe/writing/simple_writer.hpp"
#include "ppe/writing/writer.hpp"
