# Cross toolchain for the arm64 build: Debian's g++-aarch64-linux-gnu plus multiarch arm64 -dev
# packages (libraries in /usr/lib/aarch64-linux-gnu, headers shared in /usr/include).
# Tests run under qemu-user through CMAKE_CROSSCOMPILING_EMULATOR.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# Multiarch: arm64 libraries and their CMake configs live in the host's /usr, not a sysroot.
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# qemu's library prefix is "/", not /usr/aarch64-linux-gnu: the multiarch -dev packages pull in
# libc6:arm64 (/lib/aarch64-linux-gnu/libc.so.6, bookworm-security's 2.36-9+deb12u*), while
# /usr/aarch64-linux-gnu holds libc6-arm64-cross's loader (2.36-8cross1). With that prefix the
# old loader meets the newer libc and every fork() or pthread_create() in a test never returns;
# with "/" the loader and libc come from the same package.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/;-cpu;max)
