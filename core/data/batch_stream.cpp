#include "core/data/batch_stream.hpp"

#include <memory>

namespace ctrax::data {

BatchStream from_generator(std::function<std::function<Stack()>()> make) {
  struct State {
    std::function<Stack()> next;
    std::int64_t position = 0;  // index of the batch next() returns
  };
  auto state = std::make_shared<State>();
  return [make = std::move(make), state](std::int64_t index) {
    if (!state->next || index < state->position) {
      state->next = make();
      state->position = 0;
    }
    while (state->position < index) {
      state->next();
      ++state->position;
    }
    ++state->position;
    return state->next();
  };
}

}  // namespace ctrax::data
