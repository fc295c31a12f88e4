# objprof as an installed package: `cmake --install <build> --prefix P` puts
#   P/include/objprof                 the public headers
#   P/include/objprof/emit/backends   the emitters' headers (included as "backends/...")
#   P/<libdir>/libobjprof_*.a         core, ir, jvm, analysis, and emit when it was built
#   P/<libdir>/cmake/objprof          a CMake package: find_package(objprof CONFIG [COMPONENTS
#                                     core ir jvm analysis emit]) -> objprof::core, ::ir, ::jvm,
#                                     ::analysis, ::emit and the umbrella objprof::objprof
#   P/<libdir>/pkgconfig              objprof.pc (the umbrella: all four layers) and one
#                                     objprof-<layer>.pc per library
# Both are relocatable: they find the prefix from where they were installed. Included after
# backends/, so it knows whether objprof_emit exists.
include(CMakePackageConfigHelpers)

set(objprof_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/objprof)
set(objprof_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
set(objprof_layers core ir jvm analysis)
# The emitters exist only with OBJPROF_BUILD_BACKENDS (asmjit found); the package says whether
# it has them, so find_package looks for asmjit only then.
set(OBJPROF_INSTALL_EMIT OFF)
if(TARGET objprof_emit)
  set(OBJPROF_INSTALL_EMIT ON)
  list(APPEND objprof_layers emit)
  # emit_util.h and barrier_sequence.h are private to the emitters' sources.
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/backends/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/objprof/emit/backends
          FILES_MATCHING PATTERN "*.h" PATTERN "emit_util.h" EXCLUDE PATTERN "barrier_sequence.h" EXCLUDE)
endif()
list(TRANSFORM objprof_layers PREPEND objprof_ OUTPUT_VARIABLE objprof_layer_targets)
install(TARGETS ${objprof_layer_targets} objprof EXPORT objprofTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
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
file(RELATIVE_PATH objprof_pc_up /r/${objprof_pc_dir} /r)
configure_file(${PROJECT_SOURCE_DIR}/cmake/objprof.pc.in ${PROJECT_BINARY_DIR}/objprof.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/objprof.pc DESTINATION ${objprof_pc_dir})

# objprof-<layer>.pc: what each library needs, as in the CMake package. Requires names the
# layers and packages it links; pkg-config lists a package's libraries before those it
# requires, which is the static link order. asmjit has no .pc file in Debian: -lasmjit.
set(objprof_pc_core_what "runtime core: bitmap, barrier, profiler, trace writer/reader, shared memory")
set(objprof_pc_core_requires "tbb fmt")
set(objprof_pc_core_libs "-pthread")
set(objprof_pc_ir_what "register IR, analyses and barrier-elimination passes")
set(objprof_pc_ir_requires "fmt")
set(objprof_pc_jvm_what "JVM .class/.jar/.jmod import into the IR")
set(objprof_pc_jvm_requires "objprof-ir libzip")
set(objprof_pc_analysis_what "offline trace analyzer and reports")
set(objprof_pc_analysis_requires "objprof-core tbb fmt")
set(objprof_pc_emit_what "asmjit emitters of the access barrier (x86_64, arm64)")
set(objprof_pc_emit_requires "objprof-core")
set(objprof_pc_emit_cflags " -I\${includedir}/objprof/emit")
set(objprof_pc_emit_libs "-lasmjit")
foreach(layer IN LISTS objprof_layers)
  set(objprof_pc_layer ${layer})
  set(objprof_pc_what "${objprof_pc_${layer}_what}")
  set(objprof_pc_requires "${objprof_pc_${layer}_requires}")
  set(objprof_pc_cflags "${objprof_pc_${layer}_cflags}")
  set(objprof_pc_libs "${objprof_pc_${layer}_libs}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/objprof-layer.pc.in ${PROJECT_BINARY_DIR}/objprof-${layer}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/objprof-${layer}.pc DESTINATION ${objprof_pc_dir})
endforeach()
