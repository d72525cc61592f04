#include <doctest/doctest.h>

#include "layers/dense.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::layers;

TEST_CASE("names carry _in/_out suffixes when arity is not 1") {
  CHECK(Dup()->to_string() == "Dup_out2");
  CHECK(Drop()->to_string() == "Drop_out0");
  CHECK(Swap()->to_string() == "Swap_in2_out2");
  CHECK(Add()->to_string() == "Add_in2");
  CHECK(Select({0, 1, 1})->to_string() == "Select[0,1,1]_in2_out3");
  CHECK(Concatenate()->to_string() == "Concatenate_in2");
  CHECK(Concatenate(2, 0)->to_string() == "Concatenate_axis0_in2");
  CHECK(Dense(512)->to_string() == "Dense_512");
}

TEST_CASE("Branch prints its own arguments") {
  CHECK(Branch(Add(), Add())->to_string() == "Branch_in2_out2[\n  Add_in2\n  Add_in2\n]");
  CHECK(Branch(nullptr, Dense(4))->to_string() == "Branch_out2[\n  None\n  Dense_4\n]");
}

TEST_CASE("a whole tree, indented two spaces per level") {
  auto model = Serial(Dense(8), Residual(Dense(8), Dense(8)), Dup(), Parallel(Dense(2), nullptr));
  CHECK(model->to_string() ==
        "Serial_out2[\n"
        "  Dense_8\n"
        "  Serial[\n"
        "    Branch_out2[\n"
        "      None\n"
        "      Serial[\n"
        "        Dense_8\n"
        "        Dense_8\n"
        "      ]\n"
        "    ]\n"
        "    Add_in2\n"
        "  ]\n"
        "  Dup_out2\n"
        "  Parallel_in2_out2[\n"
        "    Dense_2\n"
        "    Serial\n"
        "  ]\n"
        "]");
}
