// ctrax/core/data/fingerprint.hpp — what a run read, so a resume can tell it is reading the same.
//
// A run directory stores the checkpoint of a model trained on some data. Resumed on other data —
// the file replaced, a file added to the directory — it would go on training silently on
// something else, and its figures would describe neither. So a run records, before it trains,
// the fingerprint of its --data: every data file (data_files in text_files.hpp: the file, or the
// directory's regular files without hidden ones) by its name relative to --data, its size in
// bytes and the CRC-32 of its bytes (zlib's; it catches any accidental change, not a forgery).
// A resume computes it again and names every difference.
//
// Reading costs one pass over the data (IMDB's 25 MB: well under a second).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ctrax::data {

struct FileFingerprint {
  std::string name;          // relative to the fingerprinted path ("" when the path is the file)
  std::int64_t bytes = 0;
  std::uint32_t crc32 = 0;
  bool operator==(const FileFingerprint&) const = default;
};

// Every data file of `path`, in path order. Errors name the path (not a regular file, no such path).
std::vector<FileFingerprint> fingerprint(const std::string& path);

// One line per difference ("train.tsv: 1024 bytes, crc32 0x1a2b3c4d -> 2048 bytes, crc32 …",
// "new file: extra.txt", "missing: old.txt"); empty when the two are the same.
std::vector<std::string> fingerprint_changes(const std::vector<FileFingerprint>& stored,
                                             const std::vector<FileFingerprint>& now);

}  // namespace ctrax::data
