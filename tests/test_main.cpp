// The doctest main shared by every test executable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "core/tensor/runtime.hpp"

int main(int argc, char** argv) {
  ctrax::configure_process();   // the settings the programs run with (tests/core/tensor/load_check.cpp checks without)
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  return context.run();
}
