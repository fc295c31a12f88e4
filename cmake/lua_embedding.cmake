# Lua 5.4 with objprof embedded (embed/lua), built as what it is: an out-of-tree consumer of the
# installed package. The library is installed into <build>/stage after every build of it, and
# embed/lua is configured against that prefix (find_package(objprof)) with this build's
# compiler, toolchain and sanitizers. lua-stock and objprof-lua land in <build>/bin.
include(ExternalProject)

set(OBJPROF_LUA_SOURCE_DIR "${PROJECT_SOURCE_DIR}/build/deps/lua5.4/lua5.4-5.4.4" CACHE PATH
    "Debian's lua5.4 source with objprof's hook patch (embed/lua/fetch-lua-source.sh, run by scripts/setup.sh)")
if(NOT EXISTS "${OBJPROF_LUA_SOURCE_DIR}/src/lapi.c")
  message(FATAL_ERROR "OBJPROF_BUILD_LUA: no Lua source at '${OBJPROF_LUA_SOURCE_DIR}'. Run scripts/setup.sh "
                      "(or embed/lua/fetch-lua-source.sh), or configure with -DOBJPROF_BUILD_LUA=OFF")
endif()

set(objprof_stage ${CMAKE_BINARY_DIR}/stage)
# Always runs; `cmake --install` copies only what changed.
add_custom_target(objprof_stage_install
  COMMAND ${CMAKE_COMMAND} --install ${CMAKE_BINARY_DIR} --prefix ${objprof_stage} > ${CMAKE_BINARY_DIR}/stage-install.log
  COMMENT "Installing objprof into ${objprof_stage} for embed/lua"
  VERBATIM)
# Everything cmake/install.cmake installs must be built first.
add_dependencies(objprof_stage_install ${objprof_layer_targets})

# objprof-lua-check, barrier elimination's dynamic checker (LUA_OBJPROF_CHECK), is a test
# instrument for a property of the pass and of Lua's bytecode that neither a sanitizer nor the
# target's architecture changes: the native build without sanitizers builds it and runs the
# tests that need it (tests/CMakeLists.txt). The ASan+UBSan and arm64 builds run objprof-lua
# itself everywhere, with barrier elimination on too; the checker's third copy of Lua and the
# glue took ~60 CPU-s of each of their builds.
if(OBJPROF_SANITIZE OR CMAKE_CROSSCOMPILING)
  set(OBJPROF_LUA_CHECKER OFF)
else()
  set(OBJPROF_LUA_CHECKER ON)
endif()

string(TOUPPER "${CMAKE_BUILD_TYPE}" _lua_build_type)
set(lua_cxx_flags "")
set(lua_link_flags "")
if(OBJPROF_SANITIZE)
  string(REPLACE ";" "," _lua_san "${OBJPROF_SANITIZE}")
  set(lua_cxx_flags "-fsanitize=${_lua_san} -fno-omit-frame-pointer -fno-sanitize-recover=all")
  set(lua_link_flags "-fsanitize=${_lua_san}")
endif()
set(lua_args
  -DCMAKE_PREFIX_PATH=${objprof_stage}
  -DLUA_SOURCE_DIR=${OBJPROF_LUA_SOURCE_DIR}
  -DOBJPROF_LUA_CHECKER=${OBJPROF_LUA_CHECKER}
  -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
  "-DCMAKE_CXX_FLAGS_${_lua_build_type}=${CMAKE_CXX_FLAGS_${_lua_build_type}}"
  -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
  -DCMAKE_CXX_FLAGS=${lua_cxx_flags}
  -DCMAKE_EXE_LINKER_FLAGS=${lua_link_flags}
  -DCMAKE_RUNTIME_OUTPUT_DIRECTORY=${CMAKE_BINARY_DIR}/bin)
if(CMAKE_TOOLCHAIN_FILE)
  list(APPEND lua_args -DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE})
endif()
ExternalProject_Add(objprof_lua
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/embed/lua
  BINARY_DIR ${CMAKE_BINARY_DIR}/embed-lua
  CMAKE_ARGS ${lua_args}
  BUILD_ALWAYS TRUE
  INSTALL_COMMAND ""
  DEPENDS objprof_stage_install
  USES_TERMINAL_BUILD TRUE)
