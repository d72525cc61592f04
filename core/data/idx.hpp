// ctrax/core/data/idx.hpp — IDX files, the format of MNIST and Fashion-MNIST, into tensors.
//
// An IDX file (LeCun et al.'s MNIST format) is a big-endian header, then the values:
//   magic   0x00 0x00 TT NN    TT the value type (0x08: unsigned bytes, all MNIST uses), NN the
//                              number of dimensions (1 for labels, 3 for images: N, rows, cols)
//   dims    NN × uint32        e.g. 60000, 28, 28
//   values  Π dims bytes
// Files may be gzip-compressed (Debian's dataset-fashion-mnist ships them so). Everything is
// checked, and an error names the file: the magic, that the values fill the file exactly (a
// truncated download is refused, not read short), that images and labels have as many items, and
// every label's range.
//
// Fashion-MNIST (Xiao et al. 2017): 28×28 grey images of clothes in 10 classes, 60,000 to train
// and 10,000 to test, as Debian installs them:
//   /usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax::data {

struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> values;   // Π dims bytes, row-major
};

// An unsigned-byte IDX file (plain or .gz) of `rank` dimensions (0: any).
IdxArray read_idx(const std::string& path, int rank = 0);

struct ImageSet {
  Tensor images;   // (N, rows, cols, 1) float32, the bytes / 255: values in [0, 1]
  Tensor labels;   // (N) int32, each in [0, n_classes)
};

// Images (rank 3) and their labels (rank 1), checked against each other.
ImageSet read_image_set(const std::string& images_path, const std::string& labels_path, int n_classes);

// Where Debian's dataset-fashion-mnist puts it.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline const std::vector<std::string> kFashionMnistClasses = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

// split "train" (60,000) or "test" (10,000) of the Fashion-MNIST files in `dir` (.gz or plain).
ImageSet load_fashion_mnist(const std::string& dir, const std::string& split);

}  // namespace ctrax::data
