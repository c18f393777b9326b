# ctest `layer_includes`: fails when a source file includes a layer above its own. The build
# already fails on such an include (each layer compiles against an include root holding only
# itself and the layers below, CMakeLists.txt); this check says so without building, and also
# catches relative includes ("../scenarios/x.h") that the include roots cannot see.
# cmake -DSOURCE_DIR=<checkout> -DLAYERS="sim;topologies;placement;scenarios" -P check_layer_includes.cmake
if(NOT SOURCE_DIR OR NOT LAYERS)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=... -DLAYERS=sim;topologies;... -P check_layer_includes.cmake")
endif()
set(above "${LAYERS}")
set(violations "")
foreach(layer IN LISTS LAYERS)
  list(REMOVE_AT above 0)  # now the layers above `layer`
  if(NOT above)
    break()
  endif()
  list(JOIN above "|" above_alternatives)
  file(GLOB_RECURSE files ${SOURCE_DIR}/${layer}/*.h ${SOURCE_DIR}/${layer}/*.hpp ${SOURCE_DIR}/${layer}/*.cpp)
  foreach(file IN LISTS files)
    file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<](\\.\\./)*(${above_alternatives})/")
    foreach(line IN LISTS includes)
      file(RELATIVE_PATH relative ${SOURCE_DIR} ${file})
      string(STRIP "${line}" line)
      string(APPEND violations "  ${relative} (layer ${layer}): ${line}\n")
    endforeach()
  endforeach()
endforeach()
# Inside sim/: the simulator's core rooms (SIM_CORE_ROOMS) build without YAML, ONNX and protobuf,
# so they include none of the other rooms (sim/config, sim/io, sim/models).
if(SIM_CORE_ROOMS)
  foreach(room IN LISTS SIM_CORE_ROOMS)
    file(GLOB_RECURSE files ${SOURCE_DIR}/sim/${room}/*.h ${SOURCE_DIR}/sim/${room}/*.cpp)
    list(JOIN SIM_CORE_ROOMS "|" core_alternatives)
    foreach(file IN LISTS files)
      file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]sim/")
      foreach(line IN LISTS includes)
        if(NOT line MATCHES "sim/(${core_alternatives})/")
          file(RELATIVE_PATH relative ${SOURCE_DIR} ${file})
          string(STRIP "${line}" line)
          string(APPEND violations "  ${relative} (sim core room ${room}): ${line}\n")
        endif()
      endforeach()
    endforeach()
  endforeach()
endif()
if(violations)
  message(FATAL_ERROR "upward includes (the layers are ${LAYERS}, each may include only itself and "
                      "the ones before it):\n${violations}")
endif()
message(STATUS "no upward include in ${LAYERS}")
