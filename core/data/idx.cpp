#include "core/data/idx.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "core/data/text_files.hpp"

namespace ctrax::data {

namespace fs = std::filesystem;

namespace {

std::uint32_t big_endian(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

}  // namespace

IdxArray read_idx(const std::string& path, int rank) {
  const std::string bytes = read_file(path);
  if (bytes.size() < 4)
    throw std::runtime_error(fmt::format("{}: {} bytes, too short for an IDX header", path, bytes.size()));
  const std::uint32_t magic = big_endian(bytes, 0);
  const int type = static_cast<int>((magic >> 8) & 0xFF), n_dims = static_cast<int>(magic & 0xFF);
  if ((magic >> 16) != 0 || type != 0x08 || n_dims < 1 || (rank > 0 && n_dims != rank))
    throw std::runtime_error(fmt::format(
        "{}: not an unsigned-byte IDX file of {}: its magic number is 0x{:08X}, expected 0x0000080{} "
        "(0x08: unsigned bytes, then the number of dimensions)", path,
        rank > 0 ? fmt::format("{} dimensions", rank) : std::string("any rank"), magic, rank > 0 ? rank : 1));
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(n_dims);
  if (bytes.size() < header)
    throw std::runtime_error(fmt::format("{}: truncated in its header ({} bytes, the header needs {})", path,
                                         bytes.size(), header));
  IdxArray out;
  std::uint64_t count = 1;
  for (int d = 0; d < n_dims; ++d) {
    const std::uint32_t n = big_endian(bytes, 4 + 4 * static_cast<std::size_t>(d));
    out.dims.push_back(n);
    count *= n;
    if (count > bytes.size()) break;   // cannot fit: reported below, without overflowing
  }
  if (count != bytes.size() - header)
    throw std::runtime_error(fmt::format(
        "{}: the header promises {} values ({}), the file holds {}{}", path, count,
        fmt::join(out.dims, " × "), bytes.size() - header,
        count > bytes.size() - header ? ": truncated (an interrupted download?)" : ": more bytes than the header says"));
  out.values.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return out;
}

ImageSet read_image_set(const std::string& images_path, const std::string& labels_path, int n_classes) {
  const IdxArray images = read_idx(images_path, 3), labels = read_idx(labels_path, 1);
  const std::int64_t n = images.dims[0], rows = images.dims[1], cols = images.dims[2];
  if (labels.dims[0] != n)
    throw std::runtime_error(fmt::format("{} holds {} images but {} holds {} labels", images_path, n, labels_path,
                                         labels.dims[0]));
  if (n < 1 || rows < 1 || cols < 1) throw std::runtime_error(fmt::format("{}: no images", images_path));
  ImageSet out{Tensor::empty({n, rows, cols, 1}, DType::float32), Tensor::empty({n}, DType::int32)};
  float* px = out.images.data<float>();
  for (std::size_t i = 0; i < images.values.size(); ++i) px[i] = static_cast<float>(images.values[i]) / 255.0f;
  std::int32_t* py = out.labels.data<std::int32_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    const int label = labels.values[static_cast<std::size_t>(i)];
    if (label >= n_classes)
      throw std::runtime_error(fmt::format("{}: item {} has label {}, outside the {} classes 0 … {}", labels_path, i,
                                           label, n_classes, n_classes - 1));
    py[i] = label;
  }
  return out;
}

ImageSet load_fashion_mnist(const std::string& dir, const std::string& split) {
  if (split != "train" && split != "test")
    throw std::invalid_argument(fmt::format("Fashion-MNIST has the splits train and test, not '{}'", split));
  const std::string prefix = split == "train" ? "train" : "t10k";
  const auto find = [&](const std::string& name) {
    for (const std::string& candidate : {name + ".gz", name})
      if (fs::exists(fs::path(dir) / candidate)) return (fs::path(dir) / candidate).string();
    throw std::runtime_error(fmt::format(
        "{}: no {}[.gz] (Fashion-MNIST's {} split; Debian's package: apt-get install dataset-fashion-mnist, "
        "which puts it in {})", dir, name, split, kFashionMnistDir));
  };
  return read_image_set(find(prefix + "-images-idx3-ubyte"), find(prefix + "-labels-idx1-ubyte"),
                        static_cast<int>(kFashionMnistClasses.size()));
}

}  // namespace ctrax::data
