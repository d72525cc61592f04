#include "core/data/text_files.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "core/io/path_kind.hpp"
#include "core/tensor/internal/meta_bytes.hpp"

namespace fs = std::filesystem;

namespace ctrax::data {

namespace {

std::string excerpt(const std::string& line) {
  return line.size() <= 60 ? line : line.substr(0, 57) + "...";
}

[[noreturn]] void fail_at(const std::string& path, std::size_t line, const std::string& what) {
  throw std::runtime_error(fmt::format("{}:{}: {}", path, line, what));
}

// Refuses a reading of `bytes` at `path` (max_text_bytes(), in the header); `inflated`: a
// compressed file read that far, which holds more.
[[noreturn]] void refuse_text(const std::string& path, double bytes, bool inflated = false) {
  const auto gb = ctrax::internal::gigabytes;
  const auto limit = static_cast<double>(max_text_bytes());
  const std::string why = limit < static_cast<double>(kMaxFileBytes)
      ? fmt::format("an eighth of this machine's {} of memory: the text is read whole, and its token ids take up "
                    "to 4 bytes per byte", gb(ctrax::internal::machine_memory_bytes()))
      : std::string("the most ctrax reads at once");
  throw std::runtime_error(fmt::format("{}: {}{} of text, more than one reading may hold here ({}, {})", path,
                                       inflated ? "more than " : "", gb(bytes), gb(limit), why));
}

// The label of a TSV line: digits only, fitting int32.
bool parse_label(const std::string& s, std::int32_t& label) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  label = std::stoi(s);
  return true;
}

std::vector<fs::path> review_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path());
  // By review id (the number before '_'), so the order is the TSV's.
  auto id = [](const fs::path& p) {
    const std::string stem = p.stem().string();
    try {
      return std::stol(stem.substr(0, stem.find('_')));
    } catch (const std::exception&) {
      return -1L;
    }
  };
  std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
    const long ia = id(a), ib = id(b);
    return ia != ib ? ia < ib : a < b;
  });
  return files;
}

}  // namespace

std::size_t max_text_bytes() {
  // Once per process: every file read asks (aclImdb's 50,000 reviews), and the memory stays put.
  static const std::size_t bytes = [] {
    const double eighth = ctrax::internal::machine_memory_bytes() / 8;
    return eighth > 0 && eighth < static_cast<double>(kMaxFileBytes) ? static_cast<std::size_t>(eighth)
                                                                     : kMaxFileBytes;
  }();
  return bytes;
}

void check_text_size(const std::string& path) {
  if (!fs::exists(path)) return;   // the readers name a missing path
  std::uintmax_t bytes = 0;
  if (fs::is_directory(path))
    for (const std::string& file : data_files(path)) bytes += fs::file_size(file);
  else if (fs::is_regular_file(path))
    bytes = fs::file_size(path);
  if (bytes > max_text_bytes()) refuse_text(path, static_cast<double>(bytes));
}

std::string read_file(const std::string& path) {
  if (!fs::exists(path)) throw std::runtime_error(fmt::format("{}: no such file", path));
  if (fs::is_directory(path)) throw std::runtime_error(fmt::format("{}: is a directory, expected a file", path));
  io::check_regular_file(path, "a file");
  const std::size_t limit = max_text_bytes();
  const std::uintmax_t on_disk = fs::file_size(path);
  if (on_disk > limit) refuse_text(path, static_cast<double>(on_disk));
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(path.c_str(), "rb"), gzclose);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot open", path));
  gzbuffer(f.get(), 1 << 17);
  std::string out;
  out.reserve(on_disk);   // a plain file's text in one allocation, not a doubling's two
  std::vector<char> buf(1 << 18);
  for (;;) {
    const int n = gzread(f.get(), buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int err = 0;
      throw std::runtime_error(fmt::format("{}: read error: {}", path, gzerror(f.get(), &err)));
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
    if (out.size() > limit)   // a .gz bomb, or a file growing while it is read
      refuse_text(path, static_cast<double>(limit), /*inflated=*/true);
  }
  // A truncated .gz reads like a short file until its end; zlib reports it only here
  // (Z_BUF_ERROR, "unexpected end of file"), so partial data is never taken for the whole.
  int err = Z_OK;
  const char* what = gzerror(f.get(), &err);
  if (err != Z_OK)
    throw std::runtime_error(fmt::format("{}: truncated or corrupted compressed file after {} bytes ({})", path,
                                         out.size(), what));
  if (out.compare(0, 3, "\xEF\xBB\xBF") == 0) out.erase(0, 3);   // a UTF-8 byte order mark is not text
  return out;
}

std::vector<std::string> read_lines(const std::string& path) { return split_lines(read_file(path)); }

std::vector<std::string> split_lines(const std::string& all) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < all.size()) {
    std::size_t end = all.find('\n', start);
    if (end == std::string::npos) end = all.size();
    std::size_t stop = end;
    if (stop > start && all[stop - 1] == '\r') --stop;
    lines.emplace_back(all, start, stop - start);
    start = end + 1;
  }
  return lines;
}

std::vector<LabeledText> read_labeled_tsv(const std::string& path, std::int32_t n_classes) {
  const auto lines = read_lines(path);
  std::vector<LabeledText> out;
  out.reserve(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::size_t tab = line.find('\t');
    LabeledText ex;
    if (tab == std::string::npos)
      fail_at(path, i + 1, fmt::format("expected `label<TAB>text`, got `{}` (no TAB)", excerpt(line)));
    if (!parse_label(line.substr(0, tab), ex.label))
      fail_at(path, i + 1, fmt::format("expected a non-negative integer label before the TAB, got `{}`",
                                       excerpt(line.substr(0, tab))));
    if (ex.label >= n_classes)
      fail_at(path, i + 1, fmt::format("expected a label from 0 to {}, got {}", n_classes - 1, ex.label));
    ex.text = line.substr(tab + 1);   // may be empty: a review with no text is still an input
    out.push_back(std::move(ex));
  }
  if (out.empty()) throw std::runtime_error(fmt::format("{}: no examples", path));
  return out;
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  const std::string text = read_file(path);
  std::vector<std::vector<std::string>> records;
  std::vector<std::size_t> first_lines;   // the line each record starts on, for errors
  std::vector<std::string> record;
  std::string field;
  std::size_t line = 1, record_line = 1, quote_line = 0;
  bool quoted = false, any = false;   // inside quotes; anything read into the current record
  const auto end_record = [&] {
    record.push_back(std::move(field));
    field.clear();
    records.push_back(std::move(record));
    record.clear();
    first_lines.push_back(record_line);
    any = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
        // RFC 4180: a quoted field ends at its closing quote; only a comma or a line end may follow
        // (a lenient reader would run on and merge the records after a stray quote into one field).
        const bool at_end = i + 1 == text.size() || text[i + 1] == ',' || text[i + 1] == '\n' ||
                            (text[i + 1] == '\r' && i + 2 < text.size() && text[i + 2] == '\n');
        if (!at_end)
          fail_at(path, line, fmt::format("expected a comma or a line end after the quoted field opened on line {}, "
                                          "got `{}` (a quote inside a quoted field is written \"\")",
                                          quote_line, excerpt(text.substr(i + 1, std::min<std::size_t>(20, text.find('\n', i + 1) - i - 1)))));
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (!any) record_line = line;
    if (c == '"' && field.empty()) {
      quoted = true;
      quote_line = line;
      any = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      if (c == '\r') ++i;
      end_record();
      ++line;
    } else if (c == '"') {
      fail_at(path, line, fmt::format("a quote inside an unquoted field `{}\"`: quote the whole field and write the "
                                      "quote as \"\" (RFC 4180)", excerpt(field)));
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) fail_at(path, quote_line, "a quoted field is never closed");
  if (any) end_record();
  if (records.empty()) throw std::runtime_error(fmt::format("{}: no records (not even a header)", path));
  for (std::size_t r = 1; r < records.size(); ++r)
    if (records[r].size() != records[0].size())
      fail_at(path, first_lines[r], fmt::format("expected {} fields (as the header), got {}", records[0].size(),
                                                records[r].size()));
  return records;
}

std::vector<LabeledPair> read_qa_csv(const std::string& path, std::int32_t n_classes) {
  const auto records = read_csv(path);
  if (records[0] != std::vector<std::string>{"Q", "A", "label"})
    fail_at(path, 1, fmt::format("expected the header `Q,A,label`, got `{}`", excerpt(fmt::format("{}", fmt::join(records[0], ",")))));
  std::vector<LabeledPair> out;
  out.reserve(records.size() - 1);
  for (std::size_t r = 1; r < records.size(); ++r) {
    LabeledPair p{records[r][0], records[r][1], 0};
    std::string label = records[r][2];
    label.erase(0, label.find_first_not_of(" \t"));
    label.erase(label.find_last_not_of(" \t") + 1);
    if (!parse_label(label, p.label) || p.label >= n_classes)
      throw std::runtime_error(fmt::format("{}: record {}: expected a label from 0 to {}, got `{}`", path, r,
                                           n_classes == INT32_MAX ? std::string("…") : std::to_string(n_classes - 1),
                                           excerpt(records[r][2])));
    out.push_back(std::move(p));
  }
  if (out.empty()) throw std::runtime_error(fmt::format("{}: no records after the header", path));
  return out;
}

std::string clean_review(const std::string& raw) {
  std::string out;
  out.reserve(raw.size());
  bool space = false;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '<' && i + 2 < raw.size() && std::tolower(static_cast<unsigned char>(raw[i + 1])) == 'b' &&
        std::tolower(static_cast<unsigned char>(raw[i + 2])) == 'r') {
      std::size_t j = i + 3;
      while (j < raw.size() && std::isspace(static_cast<unsigned char>(raw[j]))) ++j;
      if (j < raw.size() && raw[j] == '/') ++j;
      if (j < raw.size() && raw[j] == '>') {
        i = j;
        space = true;
        continue;
      }
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

std::vector<LabeledText> read_aclimdb(const std::string& dir, const std::string& split) {
  const fs::path root = fs::path(dir) / split;
  std::vector<fs::path> files[2];
  const char* names[2] = {"neg", "pos"};
  for (int label = 0; label < 2; ++label) {
    const fs::path d = root / names[label];
    if (!fs::is_directory(d)) throw std::runtime_error(fmt::format("{}: no such directory", d.string()));
    files[label] = review_files(d);
  }
  std::vector<LabeledText> out;
  const std::size_t n = std::max(files[0].size(), files[1].size());
  for (std::size_t i = 0; i < n; ++i)
    for (int label = 0; label < 2; ++label)
      if (i < files[label].size()) {
        out.push_back({label, clean_review(read_file(files[label][i].string()))});
      }
  if (out.empty()) throw std::runtime_error(fmt::format("{}: no reviews", root.string()));
  return out;
}

std::vector<LabeledText> load_labeled_split(const std::string& dir, const std::string& split, std::int32_t n_classes) {
  const fs::path d(dir);
  for (const char* ext : {".tsv.gz", ".tsv"})
    if (fs::is_regular_file(d / (split + ext))) return read_labeled_tsv((d / (split + ext)).string(), n_classes);
  if (fs::is_directory(d / split / "pos")) return read_aclimdb(dir, split);
  if (fs::is_directory(d / "aclImdb" / split / "pos")) return read_aclimdb((d / "aclImdb").string(), split);
  throw std::runtime_error(fmt::format(
      "{}: no {} split found; expected {}.tsv.gz, {}.tsv, {}/{{neg,pos}}/ or aclImdb/{}/{{neg,pos}}/ "
      "(scripts/get_imdb.sh makes them)", dir, split, split, split, split, split));
}

std::vector<std::string> data_files(const std::string& path) {
  if (!fs::exists(path)) throw std::runtime_error(fmt::format("{}: no such file or directory", path));
  if (!fs::is_directory(path)) {
    io::check_regular_file(path, "a file or a directory of files");
    return {path};
  }
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(path); it != fs::recursive_directory_iterator(); ++it) {
    const bool hidden = it->path().filename().string().starts_with(".");
    if (hidden) {   // .git/, .DS_Store, an editor's swap file: never data
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.push_back(it->path().string());
    if (files.size() > kMaxDataFiles)
      throw std::runtime_error(fmt::format("{}: more than {} files; give the directory that holds the data", path,
                                           kMaxDataFiles));
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_text(const std::string& path) {
  if (!fs::exists(path)) throw std::runtime_error(fmt::format("{}: no such file or directory", path));
  if (!fs::is_directory(path)) return read_file(path);
  check_text_size(path);
  std::string out;
  for (const auto& f : data_files(path)) {
    out += read_file(f);
    if (!out.empty() && out.back() != '\n') out += '\n';
    if (out.size() > max_text_bytes()) refuse_text(path, static_cast<double>(max_text_bytes()), /*inflated=*/true);
  }
  if (out.empty()) throw std::runtime_error(fmt::format("{}: no text in this directory", path));
  return out;
}

std::vector<TextPair> read_parallel(const std::string& source_path, const std::string& target_path) {
  auto src = read_lines(source_path), tgt = read_lines(target_path);
  if (src.size() != tgt.size())
    throw std::runtime_error(fmt::format("parallel files differ in length: {} has {} lines, {} has {}",
                                         source_path, src.size(), target_path, tgt.size()));
  std::vector<TextPair> out(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i].empty() != tgt[i].empty())
      fail_at(src[i].empty() ? source_path : target_path, i + 1,
              "expected a sentence, got an empty line (its pair is not empty)");
    out[i] = {std::move(src[i]), std::move(tgt[i])};
  }
  return out;
}

}  // namespace ctrax::data
