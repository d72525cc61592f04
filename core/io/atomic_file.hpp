// ctrax/core/io/atomic_file.hpp — writing a file so that nothing saved is ever lost.
//
// A file that is overwritten in place is lost if the program dies, the disk fills or the power
// fails half way: the old content is gone and the new one is incomplete. So every file ctrax
// writes (checkpoints, metrics.jsonl when it is rewritten, vocabularies, translations) goes
//     1. to "<path>.tmp", every write checked (a full disk is an error, not a short file);
//     2. flushed to the disk (fsync), so a crash after step 3 cannot leave an empty file;
//     3. renamed over <path> — atomic on POSIX: readers see the old file or the new, never half —
//        and the directory flushed too (fsync), so the rename itself survives a crash.
// On any failure the temporary file is removed, <path> is untouched, and the error names the file
// and the system's reason ("No space left on device"). Two writers must not share <path>: the
// run directory's lock (run_lock.hpp) keeps a second trainer out.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace ctrax::io {

// Writes `parts` back to back as the new content of `path` (steps 1–3 above).
void write_atomically(const std::string& path, std::span<const std::string_view> parts);
void write_atomically(const std::string& path, std::string_view bytes);

// Copies `from` to `to` the same way, through a small buffer (a checkpoint kept as
// best.safetensors: never a second copy of it in memory).
void copy_atomically(const std::string& from, const std::string& to);

// Appends `bytes` (a record: metrics.jsonl's line) whole or not at all: one write, and if it fails
// (a full disk) the file is cut back to its old length, so it never ends in half a record.
void append_whole(const std::string& path, std::string_view bytes);

}  // namespace ctrax::io
