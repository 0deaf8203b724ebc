// The precompiled header of the gtest binaries (tests/CMakeLists.txt: MLAOPS_TEST_PCH): GoogleTest
// and the standard headers most tests include, parsed once per build instead of once per test
// source (a quarter of the tests' compile time). Every test still includes what it uses; a build
// with -DMLAOPS_TEST_PCH=OFF checks that.
#pragma once
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>
