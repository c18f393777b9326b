# ctest `install`: installs the build into a scratch prefix and runs the installed placesim from
# there, so that it finds its data (share/placesim) relative to itself, not through the build tree.
# cmake -DBUILD_DIR=<build> -DPREFIX=<scratch prefix> -P check_install.cmake
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc})")
endif()
function(run_installed expect)
  # PLACESIM_* variables would point the binary elsewhere: run it without them.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PLACESIM_DATA_DIR --unset=PLACESIM_PAPERS
                          --unset=PLACESIM_PLOT_SCRIPT --unset=PLACESIM_TORCH_PLUGIN
                          ${PREFIX}/bin/placesim ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${expect}")
    message(FATAL_ERROR "installed `placesim ${ARGN}` exited ${rc}, expected output matching '${expect}':\n${out}${err}")
  endif()
endfunction()
run_installed("quickp-icc2025" reproduce --list)
run_installed("round-robin" strategies)
# With LibTorch: the installed binary loads the installed plugin (lib/placesim) and trains.
if(WITH_TORCH)
  run_installed("episode +1/1" placeto train --episodes 1 --graphs synthetic:1 --gpus 2 --out ${PREFIX}/p.pt)
endif()
# With the Python module: the installed package imports from the prefix, finds the installed data
# and runs a scenario of the installed share/placesim.
if(PYTHON_EXECUTABLE AND PYTHON_DIR)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PLACESIM_DATA_DIR --unset=PLACESIM_TORCH_PLUGIN
                          PYTHONPATH=${PREFIX}/${PYTHON_DIR} ${PYTHON_EXECUTABLE} -c
                          "import placesim, os; assert placesim.__file__.startswith('${PREFIX}'), placesim.__file__; print(placesim.__version__, os.environ['PLACESIM_DATA_DIR']); print(len(placesim.strategies()))"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "share/placesim")
    message(FATAL_ERROR "the installed Python module: exited ${rc}:\n${out}${err}")
  endif()
endif()
foreach(file share/placesim/tools/plot_results.py share/placesim/scenarios/quickstart.yaml)
  if(NOT EXISTS ${PREFIX}/${file})
    message(FATAL_ERROR "not installed: ${file}")
  endif()
endforeach()
file(REMOVE_RECURSE ${PREFIX})
