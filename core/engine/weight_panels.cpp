#include "core/engine/weight_panels.hpp"

#include <cstdlib>
#include <new>

namespace ctrax::blas {

namespace {
thread_local WeightPanels* t_scope = nullptr;
}  // namespace

WeightPanels::WeightPanels(const std::vector<Matrix>& matrices) : outer_(t_scope) {
  for (const Matrix& m : matrices)
    if (m.data != nullptr && m.rows > 0 && m.cols > 0 && (m.element_size == 4 || m.element_size == 8))
      packed_.emplace(m.data, Packed{.matrix = m});
  t_scope = this;
}

WeightPanels::~WeightPanels() { t_scope = outer_; }

WeightPanels::Packed* WeightPanels::find(const void* data, std::int64_t rows, std::int64_t cols,
                                         std::size_t element_size) {
  if (t_scope == nullptr) return nullptr;
  const auto it = t_scope->packed_.find(data);
  if (it == t_scope->packed_.end()) return nullptr;
  Packed& p = it->second;
  const Matrix& m = p.matrix;
  if (m.rows != rows || m.cols != cols || m.element_size != element_size ||
      cols * static_cast<std::int64_t>(element_size) < kPanelBytes)
    return nullptr;
  if (!p.panels) {
    const auto width = kPanelBytes / static_cast<std::int64_t>(element_size);
    const auto bytes = static_cast<std::size_t>(cols / width * width * rows) * element_size;
    void* memory = std::aligned_alloc(64, bytes);
    if (memory == nullptr) throw std::bad_alloc();
    p.panels = {static_cast<std::byte*>(memory), std::free};
  }
  return &p;
}

}  // namespace ctrax::blas
