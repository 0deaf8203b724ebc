# Install layout: include/{acl,aclnn,aclnnop,mlaops,...}, lib/libmlaops.{so,a} plus the CANN
# library names (libascendcl.so, libnnopbase.so, libopapi.so -> libmlaops.so), the CMake
# package (find_package(mlaops CONFIG), target mlaops::mlaops) and mlaops.pc.
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} PATTERN ".keep" EXCLUDE)
install(TARGETS mlaops mlaops_static EXPORT mlaopsTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(name IN LISTS MLAOPS_CANN_NAMES)
  install(CODE "execute_process(COMMAND \${CMAKE_COMMAND} -E create_symlink libmlaops.so
    \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/lib${name}.so\")")
endforeach()
install(EXPORT mlaopsTargets NAMESPACE mlaops:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mlaops)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/mlaopsConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mlaopsConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mlaops)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mlaopsConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mlaopsConfig.cmake ${PROJECT_BINARY_DIR}/mlaopsConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mlaops)
file(RELATIVE_PATH MLAOPS_PC_PREFIX_REL /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
set(MLAOPS_PC_DNNL "")
if(MLAOPS_WITH_DNNL)
  set(MLAOPS_PC_DNNL " -ldnnl")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/mlaops.pc.in ${PROJECT_BINARY_DIR}/mlaops.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/mlaops.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
