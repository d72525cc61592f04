// ctrax/core/io/regular_file.hpp — refusing a path that is there but is not a file.
//
// Reading /dev/zero never ends, and opening a named pipe waits for a writer (or, to write, a
// reader) — forever if none comes. A directory opens as a stream that fails on its first read, an
// error that would name no cause. So every reader and appender of a path the user gave checks it
// first, and says what the path is instead:
//     /dev/zero: not a regular file (a character device), expected a checkpoint
#pragma once

#include <string>
#include <string_view>

namespace ctrax::io {

// Throws "<path>: not a regular file (<what it is>), expected <expected>" when `path` exists and
// is not a regular file (following symbolic links). A path that does not exist passes: whether
// that is an error, and how to say it, is the caller's.
void check_regular_file(const std::string& path, std::string_view expected);

}  // namespace ctrax::io
