// The precompiled header of the FIA tests that include the FIA harness (tests/CMakeLists.txt:
// MLAOPS_TEST_PCH): the common one and the harness with the float64 reference and the test kit's
// headers (testkit/) it includes.
#pragma once
#include "tests/support/pch_common.h"
#include "ops/fia/fia_harness.h"
