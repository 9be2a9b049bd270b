# The layer rules of docs/architecture.md, checked over a source tree:
#   cmake -DSRC=<dir with core/, manifest/, ...> -P check_layers.cmake
# Fails (and names file:line and the rule) when
#   - a file under core/ includes an I/O, thread, clock, randomness or
#     platform header, or reads a clock, the environment or a random device;
#   - a file includes a header of a layer its own layer may not use.
# Runs in the test suite as `layering_src` (over src/) and, over a small tree
# that breaks each kind of rule, as `layering_detects_violations`.
if(NOT SRC)
  message(FATAL_ERROR "usage: cmake -DSRC=<src dir> -P check_layers.cmake")
endif()

# Who may include whom (the directory of an #include "dir/..." path).
set(allowed_core     core)
set(allowed_manifest core manifest)
set(allowed_api      core manifest api)
set(allowed_base     base)
set(allowed_store    core base store)
set(allowed_runtime  core base runtime)
set(allowed_cuda_shim cuda_shim)
set(allowed_sim      core manifest sim)
set(allowed_loop     core base loop server:auth.h server:log.h server:prom.h server:redact.h server:service.h)
set(allowed_kube     core base manifest api loop kube server:auth.h server:log.h server:prom.h server:redact.h
                     server:service.h)
set(allowed_server   core base manifest api store runtime loop server kube)
set(allowed_cli      core manifest api sim runtime cli server:config.h server:inventory.h)

# src/core is pure: no I/O, threads, clocks, randomness or platform calls.
set(core_banned_headers
  fstream iostream istream filesystem cstdio stdio.h thread mutex shared_mutex condition_variable future
  atomic semaphore latch barrier stop_token random ctime time.h csignal signal.h
  unistd.h fcntl.h dirent.h dlfcn.h netdb.h poll.h pthread.h sys/ netinet/ arpa/
  httplib.h sqlite3.h spdlog/)
set(core_banned_calls system_clock steady_clock high_resolution_clock file_clock utc_clock getenv
  random_device "std::time\\(" "std::rand\\(")
# The one exception, one header in one file: a reference count that copies handed to
# other threads may drop (core/shared_vec.h, as std::shared_ptr's own count).
set(core_allowed_atomic core/shared_vec.h)

get_filename_component(SRC "${SRC}" ABSOLUTE)
set(errors)
file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/*.h ${SRC}/*.cc)
list(SORT files)
foreach(f ${files})
  string(REGEX MATCH "^[^/]+" layer "${f}")
  if(NOT DEFINED allowed_${layer})
    continue()
  endif()
  file(STRINGS ${SRC}/${f} lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([a-z_]+)/([^\"]+)\"")
      set(dir ${CMAKE_MATCH_1})
      set(base ${CMAKE_MATCH_2})
      list(FIND allowed_${layer} ${dir} i1)
      list(FIND allowed_${layer} "${dir}:${base}" i2)
      if(i1 EQUAL -1 AND i2 EQUAL -1)
        string(REPLACE ";" ", " may "${allowed_${layer}}")
        list(APPEND errors "${f}:${n}: ${layer} may not include ${dir}/${base} (${layer} may use: ${may})")
      endif()
    endif()
    if(layer STREQUAL "core")
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*<([^>]+)>")
        set(h ${CMAKE_MATCH_1})
        foreach(b ${core_banned_headers})
          string(LENGTH "${b}" blen)
          string(SUBSTRING "${h}" 0 ${blen} hp)
          if(h STREQUAL "atomic" AND f STREQUAL core_allowed_atomic)
            continue()
          endif()
          if(h STREQUAL b OR (b MATCHES "/$" AND hp STREQUAL b))
            list(APPEND errors "${f}:${n}: src/core is pure and may not include <${h}> (I/O, threads, clocks, randomness)")
          endif()
        endforeach()
      endif()
      string(REGEX REPLACE "//.*$" "" code "${line}")
      foreach(c ${core_banned_calls})
        if(code MATCHES "${c}")
          list(APPEND errors "${f}:${n}: src/core is pure and may not use ${c} (time is an argument)")
        endif()
      endforeach()
    endif()
  endforeach()
endforeach()

if(errors)
  # One unwrapped line per problem (FATAL_ERROR would re-wrap them).
  foreach(e IN LISTS errors)
    message("${e}")
  endforeach()
  list(LENGTH errors nerrors)
  message(FATAL_ERROR "${nerrors} layer rule(s) broken (docs/architecture.md)")
endif()
list(LENGTH files nfiles)
message(STATUS "layer rules hold over ${nfiles} files")
