# The Kubernetes client's tests (src/kube), included from tests/kube/CMakeLists.txt.
# kube_client_unit_test: no API server (kubeconfig, token bucket, watch-stream
# parsing, errors, requests against an in-process HTTP server).
find_package(PkgConfig REQUIRED)
pkg_check_modules(KUBE_TEST_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
add_executable(kube_client_unit_test ${CMAKE_CURRENT_LIST_DIR}/client_unit_test.cc)
artel_target(kube_client_unit_test)
target_link_libraries(kube_client_unit_test PRIVATE artel_kube PkgConfig::KUBE_TEST_HTTPLIB GTest::gtest
                      GTest::gtest_main)
gtest_discover_tests(kube_client_unit_test TEST_PREFIX kube_ DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120
                     LABELS kube)

# kube_client_test: against a real API server (artel_kube_test of
# tests/kube/CMakeLists.txt: the fixture, the `kube` label, one API server at a time).
if(COMMAND artel_kube_test)
  artel_kube_test(kube_client_test ${CMAKE_CURRENT_LIST_DIR}/client_test.cc)
  target_link_libraries(kube_client_test PRIVATE artel_kube)
endif()
