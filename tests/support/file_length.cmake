# No source file over 800 lines (docs/testing.md "The test kit", the length check): every C / C++
# source and header, Python module, CMake script and shell script under the library (include/,
# api/, core/, ops/, kernels/, reference/), tools/, bench/, python/, testkit/, tests/, examples/,
# scripts/ and cmake/ has at most 800 lines. A file that grows past it is split along a seam (by
# topic), its shared pieces in a header or module of their own.
# Usage: cmake -DROOT=<source tree> [-DMAX_LINES=800] -P file_length.cmake. Prints one
# "file length: " line per file over the limit and fails when there is one; "file length: N files,
# the longest <path> (L lines)" otherwise.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT OR NOT IS_DIRECTORY "${ROOT}")
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> [-DMAX_LINES=800] -P file_length.cmake")
endif()
if(NOT MAX_LINES)
  set(MAX_LINES 800)
endif()

set(dirs include api core ops kernels reference tools bench python testkit tests examples scripts cmake)
set(patterns "")
foreach(dir IN LISTS dirs)
  foreach(ext IN ITEMS h hpp c cpp cc inc py cmake sh)
    list(APPEND patterns "${ROOT}/${dir}/*.${ext}")
  endforeach()
  list(APPEND patterns "${ROOT}/${dir}/CMakeLists.txt")
endforeach()
file(GLOB_RECURSE files LIST_DIRECTORIES false ${patterns})

set(n 0)
set(over 0)
set(longest "")
set(longest_lines 0)
foreach(f IN LISTS files)
  file(RELATIVE_PATH rel "${ROOT}" "${f}")
  if(rel MATCHES "(^|/)(__pycache__|build|[^/]*\\.egg-info)/")
    continue()  # generated or installed copies (a Python build tree or cache), not sources
  endif()
  math(EXPR n "${n} + 1")
  file(READ "${f}" text)
  string(REGEX REPLACE "[^\n]" "" newlines "${text}")
  string(LENGTH "${newlines}" lines)
  if(NOT text MATCHES "\n$" AND NOT text STREQUAL "")
    math(EXPR lines "${lines} + 1")  # a last line without its newline
  endif()
  if(lines GREATER MAX_LINES)
    message("file length: ${rel}: ${lines} lines; allowed at most ${MAX_LINES}")
    math(EXPR over "${over} + 1")
  endif()
  if(lines GREATER longest_lines)
    set(longest_lines ${lines})
    set(longest "${rel}")
  endif()
endforeach()

if(over GREATER 0)
  message(FATAL_ERROR "file length: ${over} of ${n} files over ${MAX_LINES} lines")
endif()
message("file length: ${n} files, the longest ${longest} (${longest_lines} lines)")
