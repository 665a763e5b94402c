# Installs the build into a temporary prefix and builds examples/ against it
# with find_package(tuned). Run by ctest (package_test).
set(prefix ${BUILD_DIR}/package_test/prefix)
file(REMOVE_RECURSE ${BUILD_DIR}/package_test)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
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
