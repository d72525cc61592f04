// ctrax/core/train/safetensors.hpp — the safetensors file format, read and written safely.
//
// safetensors (Hugging Face) is the simplest format that is both safe to load and readable
// everywhere:
//     8 bytes        N, the header length (unsigned little-endian)
//     N bytes        a JSON object: for each tensor {"dtype": "F32", "shape": [2, 3],
//                    "data_offsets": [begin, end]}, plus "__metadata__": {string: string}
//     the rest       the tensors' bytes, row-major, little-endian, back to back
// Python reads it with one call: safetensors.numpy.load_file(path) (docs/08_training.md).
//
// ctrax adds two guarantees on top of the format:
//   - writes are atomic: the bytes go to "<path>.tmp", are flushed to disk (fsync), and only then
//     renamed over <path>. A crash or error mid-write leaves the previous file untouched;
//   - the metadata carries "crc32" of the data bytes, checked on reading, so a corrupted file is
//     an error rather than silently wrong weights.
// Every error names the file and says what is wrong (truncated, not safetensors, bad header,
// checksum mismatch, ...).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax::train {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::map<std::string, std::string>;

struct SafetensorsFile {
  NamedTensors tensors;  // in file order
  Metadata metadata;     // without the "crc32" entry
};

// Writes atomically (temporary file + fsync + rename). Names must be unique and non-empty;
// tensors must hold data (not meta). Throws std::runtime_error naming the file on failure.
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const Metadata& metadata = {});

// Reads and validates the whole file, each tensor straight into its own memory. With `keep`,
// only the tensors it accepts by name are kept: the others' bytes are read for the checksum alone
// (an inference program's load leaves the optimizer's slots, two thirds of an Adam checkpoint), or
// skipped when the file has no checksum. Tensors to keep of more than half the machine's memory are
// refused before their bytes are read (loading a checkpoint holds the model's weights beside the
// file's). Throws std::runtime_error naming the file on failure.
SafetensorsFile read_safetensors(const std::string& path, const std::function<bool(const std::string&)>& keep = {});
// The metadata alone (without "crc32"): the header is read and checked — its checksum, and its
// entries against the file's size — but not the data (read_safetensors checks that).
Metadata read_safetensors_metadata(const std::string& path);
// The same, of a file's bytes in memory; errors name `path` (the fuzz target's entry point).
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& path);

}  // namespace ctrax::train
