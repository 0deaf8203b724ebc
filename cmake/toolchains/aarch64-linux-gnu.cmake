# Cross build for 64-bit Arm Linux with Debian's cross compiler (g++-aarch64-linux-gnu; its
# libgomp comes with it as libgomp1-arm64-cross). Test programs run under qemu user emulation
# (qemu-user-static) with the target's libraries from /usr/aarch64-linux-gnu: ctest and
# gtest_discover_tests start every program of the build through CMAKE_CROSSCOMPILING_EMULATOR.
# scripts/test_aarch64.sh installs what is missing and runs the suite.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /usr/aarch64-linux-gnu)
