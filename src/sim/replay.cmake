# Trace replay, reports and the isolation check (`artel sim`, `artel validate`).
# Kept apart from the scenario runner's target so the two evolve independently.

# The chart library (uPlot, MIT) is inlined into HTML reports so they work
# offline. scripts/install-deps.sh runs `npm ci` in third_party/charts; without
# it the reports still build, with tables and a note instead of charts.
set(_charts_dir ${PROJECT_SOURCE_DIR}/third_party/charts/node_modules/uplot/dist)
set(_charts_js "")
set(_charts_css "")
set(ARTEL_CHARTS_BUNDLED 0)
if(EXISTS ${_charts_dir}/uPlot.iife.min.js AND EXISTS ${_charts_dir}/uPlot.min.css)
  file(READ ${_charts_dir}/uPlot.iife.min.js _charts_js)
  file(READ ${_charts_dir}/uPlot.min.css _charts_css)
  set(ARTEL_CHARTS_BUNDLED 1)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${_charts_dir}/uPlot.iife.min.js ${_charts_dir}/uPlot.min.css)
else()
  message(STATUS "artel: uPlot not installed (run scripts/install-deps.sh); HTML reports will have no charts")
endif()
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/charts_bundle.cc.in ${CMAKE_CURRENT_BINARY_DIR}/charts_bundle.cc @ONLY)

add_library(artel_replay
  trace.cc
  replay.cc
  auto_queues.cc
  report.cc
  isolation.cc
  ${CMAKE_CURRENT_BINARY_DIR}/charts_bundle.cc
)
artel_target(artel_replay)
target_link_libraries(artel_replay PUBLIC artel_sim artel_core artel_manifest fmt::fmt PRIVATE nlohmann_json::nlohmann_json)
