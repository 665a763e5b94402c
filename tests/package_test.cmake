# Installs the build into a temporary prefix and builds examples/ against it
# with find_package(tuned). Run by ctest (package_test).
set(prefix ${BUILD_DIR}/package_test/prefix)
file(REMOVE_RECURSE ${BUILD_DIR}/package_test)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
# The client library needs no kernel-spec parser: the installed package names
# none of its libraries (TOML, JSON, expressions, SHA-256).
file(GLOB target_files ${prefix}/lib*/cmake/tuned/tunedTargets*.cmake)
if(NOT target_files)
  message(FATAL_ERROR "no tunedTargets*.cmake installed under ${prefix}")
endif()
foreach(f ${target_files})
  file(READ ${f} text)
  foreach(word tuned_spec tomlplusplus nlohmann muparser OpenSSL)
    string(FIND "${text}" "${word}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "the installed client library needs ${word} (${f})")
    endif()
  endforeach()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${BUILD_DIR}/package_test/ex
                        -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring examples/ against the installed package failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR}/package_test/ex RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building examples/ failed: ${rc}")
endif()
if(NOT EXISTS ${BUILD_DIR}/package_test/ex/sgemm_example)
  message(FATAL_ERROR "no sgemm_example was built")
endif()
message(STATUS "examples/sgemm_example built against the installed tuned package")
