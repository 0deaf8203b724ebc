#!/usr/bin/env bash
# Install-tree test: installs the build into a scratch prefix, then builds and runs
#  1. a CMake project that uses find_package(mlaops CONFIG) and mlaops::mlaops,
#  2. a C program linked the CANN way (-lascendcl -lnnopbase -lopapi),
#  3. the same C program through pkg-config (mlaops.pc),
# and checks the installed layout.
set -euo pipefail
build_dir=$1
src_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build_dir" --prefix "$prefix" >/dev/null
for f in include/acl/acl.h include/acl/acl_base.h include/acl/acl_rt.h include/aclnn/acl_meta.h \
         include/aclnn/aclnn_base.h include/mlaops/tensor_view.h lib/libmlaops.so lib/libmlaops.a \
         lib/libascendcl.so lib/libnnopbase.so lib/libopapi.so lib/libc_sec.so include/securec.h include/aclnn/opdev/fp16_t.h lib/cmake/mlaops/mlaopsConfig.cmake \
         lib/pkgconfig/mlaops.pc bin/mlaops; do
  [ -e "$prefix/$f" ] || { echo "missing in the install tree: $f"; exit 1; }
done
[ -d "$prefix/include/aclnnop" ] || { echo "missing include/aclnnop"; exit 1; }

cmake -S "$src_dir/find_package_consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$prefix/lib" "$work/consumer/consumer"

${CC:-cc} -std=c99 -Wall -Wextra -Werror -pedantic -I"$prefix/include" "$src_dir/cann_link_consumer.c" \
  -L"$prefix/lib" -lascendcl -lnnopbase -lopapi -o "$work/cann_consumer"
LD_LIBRARY_PATH="$prefix/lib" "$work/cann_consumer"

PKG_CONFIG_PATH="$prefix/lib/pkgconfig" ${CC:-cc} $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags mlaops) \
  "$src_dir/cann_link_consumer.c" $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --libs mlaops) -o "$work/pc_consumer"
LD_LIBRARY_PATH="$prefix/lib" "$work/pc_consumer"
"$prefix/bin/mlaops" info >/dev/null
echo "install tree test: passed"
