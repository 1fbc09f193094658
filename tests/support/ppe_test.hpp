#pragma once
// The one header every test includes. LibTorch pulls in glog, whose CHECK(...)
// macros would replace doctest's: include LibTorch (and glog) first, drop
// glog's assertion macros, then include doctest so that its macros win.

#include <c10/util/Logging.h>
#include <torch/torch.h>

#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LE
#undef CHECK_LT
#undef CHECK_GE
#undef CHECK_GT
#undef CHECK_NOTNULL
#undef DCHECK
#undef DCHECK_EQ
#undef DCHECK_NE
#undef DCHECK_LE
#undef DCHECK_LT
#undef DCHECK_GE
#undef DCHECK_GT

#include <doctest/doctest.h>

#include <ppe/ppe.hpp>
#include <ppe/serialization.hpp>

#include "test_util.hpp"
