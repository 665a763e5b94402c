# Precompiled headers: the external headers that nearly every file includes
# (gRPC, Protobuf with the API's generated tuner.pb.h, Abseil's status and
# strings; GoogleTest for the tests) parse in about 2-3 s of a file's 5-8 s.
# They are compiled once, into tuned_pch (tuned_test_pch for the tests), and
# every C++ target that links tuned_proto reuses that (REUSE_FROM), so each
# file starts from them. On the 2-core CI machine's kind, the build took
# 274 s instead of 341 with GCC, and the fuzz build (clang, ASan) 209 s
# instead of 237. Every target shares the project's compile options; where
# a file's defines touched these headers, GCC would compile it without the
# header (-Winvalid-pch warns) and clang would refuse it.
#
#   tuned_precompile_headers(DIR...)   after every target of DIR... is defined

set(TUNED_PCH_HEADERS <algorithm> <map> <memory> <string> <string_view> <vector>
    <grpcpp/grpcpp.h> [["tuned/v1/tuner.pb.h"]] <absl/status/status.h> <absl/status/statusor.h>
    <absl/strings/str_cat.h>)

# Sets `out` to TRUE if `target` links tuned_proto, directly or through the
# targets it links; `seen` holds the targets already looked at.
function(_tuned_links_proto target out seen)
  set(found FALSE)
  get_target_property(imported ${target} IMPORTED)
  set(deps)
  if(NOT imported)
    get_target_property(direct ${target} LINK_LIBRARIES)
    if(direct)
      list(APPEND deps ${direct})
    endif()
  endif()
  get_target_property(iface ${target} INTERFACE_LINK_LIBRARIES)
  if(iface)
    list(APPEND deps ${iface})
  endif()
  foreach(dep ${deps})
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" dep "${dep}")
    if(dep STREQUAL "tuned_proto")
      set(found TRUE)
      break()
    endif()
    if(TARGET ${dep} AND NOT dep IN_LIST seen AND dep MATCHES "^tuned_")
      list(APPEND seen ${dep})
      _tuned_links_proto(${dep} sub "${seen}")
      if(sub)
        set(found TRUE)
        break()
      endif()
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

function(tuned_precompile_headers)
  # Written only when it changes, so that a reconfigure rebuilds nothing.
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/gen/pch.cc
       CONTENT "// tuned_pch's one file: the precompiled headers are its product.\n")
  add_library(tuned_pch STATIC ${CMAKE_BINARY_DIR}/gen/pch.cc)
  target_link_libraries(tuned_pch PRIVATE tuned_proto absl::status absl::statusor absl::strings)
  target_precompile_headers(tuned_pch PRIVATE ${TUNED_PCH_HEADERS})
  if(BUILD_TESTING)
    add_library(tuned_test_pch STATIC ${CMAKE_BINARY_DIR}/gen/pch.cc)
    target_link_libraries(tuned_test_pch PRIVATE tuned_proto absl::status absl::statusor
                          absl::strings GTest::gtest)
    target_precompile_headers(tuned_test_pch PRIVATE ${TUNED_PCH_HEADERS} <gtest/gtest.h>)
    # The options that the tests' directory adds (tests/CMakeLists.txt: -O0),
    # without which GCC would not use the header for their files.
    get_directory_property(top_options DIRECTORY ${CMAKE_SOURCE_DIR} COMPILE_OPTIONS)
    get_directory_property(test_options DIRECTORY ${CMAKE_SOURCE_DIR}/tests COMPILE_OPTIONS)
    list(REMOVE_ITEM test_options ${top_options})
    target_compile_options(tuned_test_pch PRIVATE ${test_options})
  endif()
  foreach(dir ${ARGN})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t ${targets})
      get_target_property(type ${t} TYPE)
      if(NOT type MATCHES "^(STATIC_LIBRARY|EXECUTABLE)$" OR t MATCHES "^tuned_(test_)?pch$"
         OR t STREQUAL "tuned_proto")
        continue()
      endif()
      _tuned_links_proto(${t} links "")
      if(NOT links)
        continue()
      endif()
      get_target_property(direct ${t} LINK_LIBRARIES)
      if("GTest::gtest" IN_LIST direct AND TARGET tuned_test_pch)
        target_precompile_headers(${t} REUSE_FROM tuned_test_pch)
      else()
        target_precompile_headers(${t} REUSE_FROM tuned_pch)
      endif()
    endforeach()
  endforeach()
endfunction()
