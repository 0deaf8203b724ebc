# The include layering of the source tree (docs/testing.md "The test kit"; docs/architecture.md):
#  * the library (include/, api/, core/, ops/, kernels/, reference/) includes nothing from tests/,
#    testkit/, tools/, bench/ or python/;
#  * tools/, bench/ and python/ include nothing from tests/ (what they share with the tests is in
#    testkit/), and testkit/ nothing from tests/, tools/, bench/, python/ or reference/ (the test
#    data builds its cases without the float64 reference);
#  * neither by a path through such a directory nor by a name that only an include path into tests/
#    would find ("ops/fia/fia_compare.h" is tests/ops/fia/fia_compare.h);
#  * the CMake files of tools/, bench/, python/ and testkit/ name no tests/ path outside comments.
# Usage: cmake -DROOT=<source tree> -P layering.cmake. Prints one "layering violation: " line per
# finding and fails when there is one; "layering: N files" otherwise.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT OR NOT IS_DIRECTORY "${ROOT}")
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P layering.cmake")
endif()

set(library_dirs include api core ops kernels reference)
set(library_forbidden "(^|/)(tests|testkit|tools|bench|python)/")
set(app_dirs tools bench python)
set(app_forbidden "(^|/)tests/")
set(testkit_forbidden "(^|/)(tests|tools|bench|python|reference)/")

set(findings 0)
set(files_seen 0)

# check_includes(<directory under ROOT> <regex of forbidden include paths>)
function(check_includes dir forbidden)
  file(GLOB_RECURSE files LIST_DIRECTORIES false "${ROOT}/${dir}/*.h" "${ROOT}/${dir}/*.hpp" "${ROOT}/${dir}/*.c"
       "${ROOT}/${dir}/*.cpp" "${ROOT}/${dir}/*.inc")
  list(LENGTH files n)
  math(EXPR seen "${files_seen} + ${n}")
  set(files_seen ${seen} PARENT_SCOPE)
  set(found ${findings})
  foreach(f IN LISTS files)
    get_filename_component(fdir "${f}" DIRECTORY)
    file(RELATIVE_PATH rel "${ROOT}" "${f}")
    file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][^\">]+[\">]")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">].*" "\\1" inc "${line}")
      set(why "")
      if(inc MATCHES "${forbidden}")
        set(why "${dir}/ must not include from this directory")
      elseif(EXISTS "${ROOT}/tests/${inc}" AND NOT IS_DIRECTORY "${ROOT}/tests/${inc}" AND NOT EXISTS "${fdir}/${inc}"
             AND NOT EXISTS "${ROOT}/${inc}" AND NOT EXISTS "${ROOT}/include/${inc}")
        set(why "only an include path into tests/ finds tests/${inc}")
      endif()
      if(why)
        message("layering violation: ${rel}: ${line}: ${why}")
        math(EXPR found "${found} + 1")
      endif()
    endforeach()
  endforeach()
  set(findings ${found} PARENT_SCOPE)
endfunction()

foreach(dir IN LISTS library_dirs)
  check_includes(${dir} "${library_forbidden}")
endforeach()
foreach(dir IN LISTS app_dirs)
  check_includes(${dir} "${app_forbidden}")
endforeach()
check_includes(testkit "${testkit_forbidden}")

# The CMake files: no tests/ path outside comments (an include directory or a source there).
foreach(dir IN LISTS app_dirs ITEMS testkit)
  if(NOT EXISTS "${ROOT}/${dir}/CMakeLists.txt")
    continue()
  endif()
  file(READ "${ROOT}/${dir}/CMakeLists.txt" text)
  string(REGEX REPLACE "(^|\n)[ \t]*#[^\n]*" "\\1" code "${text}")      # whole-line comments
  string(REGEX REPLACE "[ \t]+#[^\n\"]*(\n|$)" "\\1" code "${code}")     # trailing comments
  string(REGEX MATCHALL "[^\n]*(/tests([/ \t\")]|\n|$)|(^|[ \t\"(])tests/)[^\n]*" hits "${code}")
  foreach(hit IN LISTS hits)
    message("layering violation: ${dir}/CMakeLists.txt: ${hit}: a tests/ path")
    math(EXPR findings "${findings} + 1")
  endforeach()
endforeach()

if(findings GREATER 0)
  message(FATAL_ERROR "layering: ${findings} violation(s) in ${files_seen} files")
endif()
if(files_seen LESS 100)
  message(FATAL_ERROR "layering: only ${files_seen} source files under ${ROOT}: not a source tree?")
endif()
message("layering: ${files_seen} files, no violation")
