# Writes OUT from IN (runtime/version.hpp.in) with PROJECT_VERSION and the source tree's git revision:
# `git rev-parse --short=12 HEAD`, with "-dirty" when tracked files differ from HEAD, "unknown" outside
# a git checkout. Run by the chunkflow_version target at every build, so the context blocks of output
# files name the revision the binary was built from, not the one of the last configure; configure_file
# rewrites OUT only when its text changes, so an unchanged revision recompiles nothing.
# Usage: cmake -DROOT=<source dir> -DIN=<template> -DOUT=<header> -DPROJECT_VERSION=<x.y.z> -P version.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${ROOT}
                OUTPUT_VARIABLE CHUNKFLOW_GIT_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT CHUNKFLOW_GIT_REVISION)
  set(CHUNKFLOW_GIT_REVISION "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${ROOT}
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    string(APPEND CHUNKFLOW_GIT_REVISION "-dirty")
  endif()
endif()
configure_file(${IN} ${OUT} @ONLY)
