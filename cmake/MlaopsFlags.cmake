# Warnings, sanitizers, the target architecture and per-file ISA flags.
#
# Everything is compiled for the architecture's baseline. On x86-64 (MLAOPS_ARCH_X86_64, also a
# compile definition of every target) the kernel files whose names carry an ISA
# (kernels/cpu/*_avx2*.cpp, *_avx512*.cpp) are compiled with that ISA's flags and run only when
# their family's registry row is picked (core/kernel_registry.h, docs/runtime.md); elsewhere they
# are not compiled and the families list their portable rows only.

set(MLAOPS_WARNING_FLAGS -Wall -Wextra -Wshadow -Wno-unused-parameter)
if(MLAOPS_WERROR)
  list(APPEND MLAOPS_WARNING_FLAGS -Werror)
endif()

function(mlaops_target_warnings target)
  target_compile_options(${target} PRIVATE ${MLAOPS_WARNING_FLAGS})
endfunction()

if(MLAOPS_SANITIZE)
  # -g1: line tables and function names, what the sanitizers' stack traces print (file:line per
  # frame), at a quarter less compile time than -g (docs/ci.md)
  add_compile_options(-fsanitize=${MLAOPS_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer -g1)
  add_link_options(-fsanitize=${MLAOPS_SANITIZE})
endif()

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(MLAOPS_ARCH_X86_64 ON)
  add_compile_definitions(MLAOPS_ARCH_X86_64)
else()
  set(MLAOPS_ARCH_X86_64 OFF)
endif()

# The row gates in core/kernel_registry.h state what these flags allow the compiler to use.
set(MLAOPS_AVX2_FLAGS -mavx2 -mfma -mf16c -mbmi2)
set(MLAOPS_AVX512_FLAGS ${MLAOPS_AVX2_FLAGS} -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx512vnni)

# mlaops_isa_sources(<list variable>): on x86-64 gives the ISA files of the list their flags;
# elsewhere removes them from the list.
function(mlaops_isa_sources var)
  set(kept "")
  foreach(src IN LISTS ${var})
    get_filename_component(name ${src} NAME_WE)
    if(NOT name MATCHES "_avx(2|512)")
      list(APPEND kept ${src})
    elseif(MLAOPS_ARCH_X86_64)
      list(APPEND kept ${src})
      if(name MATCHES "_avx512")
        set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${MLAOPS_AVX512_FLAGS}")
      else()
        set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${MLAOPS_AVX2_FLAGS}")
      endif()
    endif()
  endforeach()
  set(${var} ${kept} PARENT_SCOPE)
endfunction()
