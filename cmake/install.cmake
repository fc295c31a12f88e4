# objprof as an installed package: `cmake --install <build> --prefix P` puts the headers in
# P/include/objprof, the libraries (libobjprof_core.a, _ir, _jvm, _analysis) in P/<libdir>, a
# CMake package (find_package(objprof CONFIG) -> objprof::core, ::ir, ::jvm, ::analysis and the
# umbrella objprof::objprof) in P/<libdir>/cmake/objprof and objprof.pc in P/<libdir>/pkgconfig.
# Both are relocatable: they find the prefix from where they were installed.
include(CMakePackageConfigHelpers)

set(objprof_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/objprof)
install(TARGETS objprof_core objprof_ir objprof_jvm objprof_analysis objprof
  EXPORT objprofTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/objprof DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT objprofTargets NAMESPACE objprof:: DESTINATION ${objprof_cmake_dir})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/objprofConfig.cmake.in
  ${PROJECT_BINARY_DIR}/objprofConfig.cmake INSTALL_DESTINATION ${objprof_cmake_dir})
# 0.x: no compatibility promise between minor versions yet.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/objprofConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/objprofConfig.cmake ${PROJECT_BINARY_DIR}/objprofConfigVersion.cmake
  DESTINATION ${objprof_cmake_dir})

# pkg-config: the prefix is found from the .pc file's own place (${pcfiledir}).
file(RELATIVE_PATH objprof_pc_up /r/${CMAKE_INSTALL_LIBDIR}/pkgconfig /r)
configure_file(${PROJECT_SOURCE_DIR}/cmake/objprof.pc.in ${PROJECT_BINARY_DIR}/objprof.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/objprof.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
