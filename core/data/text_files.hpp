// ctrax/core/data/text_files.hpp — reading the text datasets the examples train on.
//
// Every reader takes plain or gzip-compressed files alike (zlib's gzread passes plain files
// through), so `train.tsv` and `train.tsv.gz` are the same to the caller. Text is kept as UTF-8
// bytes; tokenizers decide what a symbol is.
//
// FORMATS
//   labelled TSV        one example per line: `<label><TAB><text>`, label a non-negative integer.
//                       (IMDB as shipped in ../shared/data/imdb: 0 = negative, 1 = positive.)
//   aclImdb layout      DIR/{train,test}/{neg,pos}/<id>_<stars>.txt, the official archive; each
//                       review is cleaned as the shipped TSV was: `<br />` → space, whitespace
//                       runs → one space, trimmed.
//   plain text          one file, or a directory whose regular files are read in name order and
//                       joined (a language model's corpus); hidden files and directories are skipped.
//   parallel text       two files, line i of one the translation of line i of the other.
//   CSV                 RFC 4180: comma-separated fields, "quoted" where they hold commas, quotes
//                       or line breaks ("" inside quotes is one "); CRLF or LF line ends; the last
//                       record with or without one. Strictly: a quote may open a field or close it
//                       (then a comma or a line end follows), nothing else — a stray quote would
//                       otherwise merge the records after it into one field. (The Korean chatbot
//                       pairs in ../shared/data/chatbot_ko: `Q,A,label`.)
//
// ERRORS name the file and the line: "train.tsv:17: expected `label<TAB>text`, got `…`".
// A missing file names the path; a directory without data says which layouts were looked for.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ctrax::data {

// Bounds on what one reading may take. A data file is read whole, and what reads it keeps more
// beside its text: a language model's token ids take up to 4 bytes per byte of text (one id of
// int32 per character), and a split or a batch copies. So a reading — a file, or a corpus
// directory's files together — may hold at most an eighth of the machine's memory (its
// container's limit where lower), and never more than kMaxFileBytes; more (or a compressed file
// that inflates past it) is refused with the figures before it is read, not left to end in
// std::bad_alloc or the kernel's kill.
inline constexpr std::size_t kMaxFileBytes = std::size_t{16} << 30;
inline constexpr std::size_t kMaxDataFiles = 1'000'000;
std::size_t max_text_bytes();
// Refuses `path` (a file or a directory of data files) when its data files hold more bytes on
// disk than max_text_bytes(), naming the path and the figures.
void check_text_size(const std::string& path);

// The whole file (plain or .gz) as bytes, a leading UTF-8 byte order mark dropped. Only a regular
// file is read: a directory, a device (/dev/zero) or a pipe is refused with its path.
std::string read_file(const std::string& path);
// The lines of a file (plain or .gz), without their '\n' (and without a trailing '\r').
std::vector<std::string> read_lines(const std::string& path);
// The same split, of text in memory.
std::vector<std::string> split_lines(const std::string& text);

struct LabeledText {
  std::int32_t label = 0;
  std::string text = "";
};

// `label<TAB>text` per line, label in 0 .. n_classes-1. The text may be empty (real test sets hold
// a few reviews with no text: they are inputs like any other); an empty line is an error (a TSV
// has no blank records), and so is a label out of range — both with file:line, before any work.
std::vector<LabeledText> read_labeled_tsv(const std::string& path, std::int32_t n_classes = INT32_MAX);

// One split ("train" or "test") of the aclImdb layout under `dir` (which holds train/ and test/).
// Labels: neg → 0, pos → 1; reviews in (id, label) order, alternating neg/pos as the TSV does.
std::vector<LabeledText> read_aclimdb(const std::string& dir, const std::string& split);

// A split of a sentiment dataset directory, whichever layout it has, looked for in this order:
// DIR/<split>.tsv.gz, DIR/<split>.tsv, DIR/<split>/{neg,pos}, DIR/aclImdb/<split>/{neg,pos}.
// Labels are checked against n_classes in the TSV layouts (aclImdb's are 0 and 1 by construction).
std::vector<LabeledText> load_labeled_split(const std::string& dir, const std::string& split,
                                            std::int32_t n_classes = INT32_MAX);

// The data files of a path: the path itself if it is a regular file, else every regular file
// under the directory (recursively, in path order), skipping hidden entries (.git/ and the like).
std::vector<std::string> data_files(const std::string& path);
// A corpus: data_files(path) read and joined.
std::string read_text(const std::string& path);

// Aligned sentence pairs from two files of equal line counts (else an error naming both counts).
struct TextPair {
  std::string source = "", target = "";
};
std::vector<TextPair> read_parallel(const std::string& source_path, const std::string& target_path);

// The records of a CSV file, the header first, every record with as many fields as the header
// ("ChatbotData.csv:17: expected 3 fields, got 2"); an unterminated quote names the line it opened on.
std::vector<std::vector<std::string>> read_csv(const std::string& path);

// Question–answer pairs with a class label, from a CSV whose header is `Q,A,label` (the chatbot
// data). Labels may carry spaces around them ("2   " is 2) and must be in 0 .. n_classes-1.
struct LabeledPair {
  std::string question = "", answer = "";
  std::int32_t label = 0;
};
std::vector<LabeledPair> read_qa_csv(const std::string& path, std::int32_t n_classes = INT32_MAX);

// The aclImdb cleaning: `<br />` (any case, `<br>`, `<br/>`) → ' ', whitespace runs → ' ', trim.
std::string clean_review(const std::string& raw);

}  // namespace ctrax::data
