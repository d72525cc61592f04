// ctrax/core/io/path_kind.hpp — refusing a path that is there but is not what it should be.
//
// Reading /dev/zero never ends, and opening a named pipe waits for a writer (or, to write, a
// reader) — forever if none comes. A directory opens as a stream that fails on its first read, and
// a run directory given as the path of a file fails deep in the standard library, in its words
// ("filesystem error: cannot create directories: Not a directory"). So every reader and writer of
// a path the user gave checks it first, and says what the path is and what was expected:
//     /dev/zero: not a regular file (a character device), expected a checkpoint
//     notes.txt: not a directory (a regular file), expected the run's directory
#pragma once

#include <string>
#include <string_view>

namespace ctrax::io {

// Throws "<path>: not a regular file (<what it is>), expected <expected>" when `path` exists and
// is not a regular file (following symbolic links). A path that does not exist passes: whether
// that is an error, and how to say it, is the caller's.
void check_regular_file(const std::string& path, std::string_view expected);

// Makes the directory `dir` and any of its parents that are missing. When `dir` exists and is not
// a directory: "<dir>: not a directory (<what it is>), expected <expected>"; when the system
// refuses: "<dir>: cannot make <expected>: <its reason>" (a parent that is a file: "Not a
// directory"; "Permission denied").
void create_directories(const std::string& dir, std::string_view expected);

}  // namespace ctrax::io
