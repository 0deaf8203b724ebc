# Warnings, sanitizers and per-file ISA flags.
#
# Everything is compiled for baseline x86-64; only kernel files whose names carry an ISA
# (kernels/cpu/*_avx2.cpp, *_avx512*.cpp) get that ISA's flags, and they run only when the
# run-time dispatch (core/cpu_features.cpp) selects them.

set(MLAOPS_WARNING_FLAGS -Wall -Wextra -Wshadow -Wno-unused-parameter)
if(MLAOPS_WERROR)
  list(APPEND MLAOPS_WARNING_FLAGS -Werror)
endif()

function(mlaops_target_warnings target)
  target_compile_options(${target} PRIVATE ${MLAOPS_WARNING_FLAGS})
endfunction()

if(MLAOPS_SANITIZE)
  add_compile_options(-fsanitize=${MLAOPS_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=${MLAOPS_SANITIZE})
endif()

set(MLAOPS_AVX2_FLAGS -mavx2 -mfma -mf16c -mbmi2)
set(MLAOPS_AVX512_FLAGS ${MLAOPS_AVX2_FLAGS} -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx512vnni)

function(mlaops_set_isa_flags)
  foreach(src IN LISTS ARGN)
    get_filename_component(name ${src} NAME_WE)
    if(name MATCHES "_avx512")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${MLAOPS_AVX512_FLAGS}")
    elseif(name MATCHES "_avx2")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${MLAOPS_AVX2_FLAGS}")
    endif()
  endforeach()
endfunction()
