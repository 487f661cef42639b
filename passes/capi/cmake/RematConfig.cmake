# find_package(Remat CONFIG): the remat pass's C API for CMake projects built on MLIR 22.
#
# Imported targets:
#   Remat::remat         libremat.so; brings MLIR's shared libMLIR.so (target MLIR).
#   Remat::remat_static  libremat.a, with what it needs: MLIR's C API archives over libMLIR.so,
#                        libLLVM.so and the system libraries Rust's standard library uses.
#   Remat::mlir_c        MLIR's C API (Debian ships it only as static libMLIRCAPI*.a archives
#                        over libMLIR.so), for C callers that use mlir-c/ themselves.
#
# From the source tree, point Remat_DIR at passes/capi/cmake and REMAT_LIBRARY_DIR at cargo's
# output (target/release or target/debug). tools/install-capi.sh installs the package in a
# prefix, where it finds everything next to itself.

include(CMakeFindDependencyMacro)
# Debian puts MLIR 22 under /usr/lib/llvm-22; set MLIR_DIR for another location.
find_dependency(MLIR 22.1 CONFIG HINTS /usr/lib/llvm-22/lib/cmake/mlir)

if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/../include/remat-c/Remat.h")
  # Source tree: passes/capi/cmake.
  get_filename_component(_remat_include "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
else()
  # Installed: PREFIX/lib/cmake/Remat.
  get_filename_component(_remat_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
  set(_remat_include "${_remat_prefix}/include")
  if(NOT REMAT_LIBRARY_DIR)
    set(REMAT_LIBRARY_DIR "${_remat_prefix}/lib")
  endif()
endif()
if(NOT REMAT_LIBRARY_DIR)
  message(FATAL_ERROR "Remat: set REMAT_LIBRARY_DIR to the directory with libremat.so and libremat.a (cargo's target/release or target/debug)")
endif()
foreach(_remat_file libremat.so libremat.a)
  if(NOT EXISTS "${REMAT_LIBRARY_DIR}/${_remat_file}")
    message(FATAL_ERROR "Remat: ${REMAT_LIBRARY_DIR}/${_remat_file} not found (build it with `cargo build -p remat-capi`)")
  endif()
endforeach()

if(NOT TARGET Remat::mlir_c)
  file(GLOB _remat_mlir_c_archives "${LLVM_LIBRARY_DIR}/libMLIRCAPI*.a")
  list(SORT _remat_mlir_c_archives)
  add_library(Remat::mlir_c INTERFACE IMPORTED)
  set_target_properties(Remat::mlir_c PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${MLIR_INCLUDE_DIRS}"
    # The archives call each other, libMLIR.so and libLLVM.so: link them as one group. They are C++.
    INTERFACE_LINK_LIBRARIES "$<LINK_GROUP:RESCAN,${_remat_mlir_c_archives};${LLVM_LIBRARY_DIR}/libMLIR.so;${LLVM_LIBRARY_DIR}/libLLVM.so>;MLIR;stdc++")

  add_library(Remat::remat SHARED IMPORTED)
  set_target_properties(Remat::remat PROPERTIES
    IMPORTED_LOCATION "${REMAT_LIBRARY_DIR}/libremat.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_remat_include};${MLIR_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "MLIR")

  add_library(Remat::remat_static STATIC IMPORTED)
  set_target_properties(Remat::remat_static PROPERTIES
    IMPORTED_LOCATION "${REMAT_LIBRARY_DIR}/libremat.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_remat_include};${MLIR_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "Remat::mlir_c;MLIR;LLVM;gcc_s;util;rt;pthread;m;dl")
endif()
set(Remat_FOUND TRUE)
