// Every dataset format reads, plain and gzipped, and malformed input names the file and line.
#include <doctest/doctest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "core/data/text_files.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/files.hpp"

using namespace ctrax::data;
using ctrax::testing::TempDir;
using ctrax::testing::error_of;
using ctrax::testing::write_bytes;

namespace {

void write_gz(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

}  // namespace

TEST_CASE("read_lines reads plain and gzipped files alike, dropping \\r\\n endings") {
  TempDir dir;
  write_bytes(dir / "a.txt", "one\r\ntwo\nthree");
  write_gz(dir / "a.txt.gz", "one\r\ntwo\nthree");
  const std::vector<std::string> expected{"one", "two", "three"};
  CHECK(read_lines(dir / "a.txt") == expected);
  CHECK(read_lines(dir / "a.txt.gz") == expected);
  CHECK(read_file(dir / "a.txt.gz") == "one\r\ntwo\nthree");
  CHECK(error_of([&] { read_file(dir / "missing.txt"); }) == dir / "missing.txt" + ": no such file");
}

TEST_CASE("read_labeled_tsv: label<TAB>text per line") {
  TempDir dir;
  write_gz(dir / "train.tsv.gz", "0\tbad film\n1\tgreat\tfilm\n");
  const auto ex = read_labeled_tsv(dir / "train.tsv.gz");
  REQUIRE(ex.size() == 2);
  CHECK(ex[0].label == 0);
  CHECK(ex[0].text == "bad film");
  CHECK(ex[1].label == 1);
  CHECK(ex[1].text == "great\tfilm");  // only the first TAB separates
}

TEST_CASE("read_labeled_tsv: a malformed line gives file:line and what was wrong") {
  TempDir dir;
  write_bytes(dir / "a.tsv", "0\tfine\nno tab here\n");
  CHECK(error_of([&] { read_labeled_tsv(dir / "a.tsv"); }) ==
        dir / "a.tsv" + ":2: expected `label<TAB>text`, got `no tab here` (no TAB)");
  write_bytes(dir / "b.tsv", "0\tfine\n1\tok\npositive\tnice\n");
  CHECK(error_of([&] { read_labeled_tsv(dir / "b.tsv"); }) ==
        dir / "b.tsv" + ":3: expected a non-negative integer label before the TAB, got `positive`");
  write_bytes(dir / "c.tsv", "0\tfine\n2\tthree classes?\n");
  CHECK(error_of([&] { read_labeled_tsv(dir / "c.tsv", 2); }) == dir / "c.tsv" + ":2: expected a label from 0 to 1, got 2");
  write_bytes(dir / "d.tsv", "0\tfine\n\n");
  CHECK(error_of([&] { read_labeled_tsv(dir / "d.tsv"); }).find(":2: expected `label<TAB>text`") != std::string::npos);
}

TEST_CASE("read_labeled_tsv: an empty text is an input, not an error") {
  TempDir dir;
  write_bytes(dir / "a.tsv", "1\t\n0\tfine\n");
  const auto ex = read_labeled_tsv(dir / "a.tsv", 2);
  REQUIRE(ex.size() == 2);
  CHECK(ex[0].label == 1);
  CHECK(ex[0].text.empty());
}

TEST_CASE("a truncated .gz is an error naming the file, never partial data") {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += std::to_string(i * 7919 % 10007) + " words\n";
  write_gz(dir / "a.txt.gz", text);
  CHECK(read_file(dir / "a.txt.gz") == text);
  std::ifstream in(dir / "a.txt.gz", std::ios::binary);
  const std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_bytes(dir / "cut.txt.gz", gz.substr(0, gz.size() / 2));
  const std::string e = error_of([&] { read_file(dir / "cut.txt.gz"); });
  CHECK(e.rfind(dir / "cut.txt.gz" + ": truncated or corrupted compressed file", 0) == 0);
  CHECK(error_of([&] { read_lines(dir / "cut.txt.gz"); }) == e);
}

TEST_CASE("clean_review does what the shipped IMDB TSV did") {
  CHECK(clean_review("  Great<br /><br />film,\t really.<BR>Yes<br/>  ") == "Great film, really. Yes");
  CHECK(clean_review("a <b>bold</b> <i>x</i>") == "a <b>bold</b> <i>x</i>");
}

TEST_CASE("aclImdb layout: neg -> 0, pos -> 1, in id order, interleaved like the TSV") {
  TempDir dir;
  write_bytes(dir / "aclImdb/train/neg/0_3.txt", "Bad.<br />Really bad.");
  write_bytes(dir / "aclImdb/train/neg/10_1.txt", "Awful.");
  write_bytes(dir / "aclImdb/train/neg/2_2.txt", "Dull.");
  write_bytes(dir / "aclImdb/train/pos/0_9.txt", "Great.");
  write_bytes(dir / "aclImdb/train/pos/1_8.txt", "Fine.");
  const auto ex = load_labeled_split(dir.str(), "train");
  REQUIRE(ex.size() == 5);
  CHECK(ex[0].text == "Bad. Really bad.");
  CHECK(ex[0].label == 0);
  CHECK(ex[1].text == "Great.");
  CHECK(ex[1].label == 1);
  CHECK(ex[2].text == "Dull.");   // id 2 before id 10
  CHECK(ex[3].text == "Fine.");
  CHECK(ex[4].text == "Awful.");
  // DIR/train/{neg,pos} directly works too.
  CHECK(load_labeled_split((dir / "aclImdb"), "train").size() == 5);
  CHECK(error_of([&] { load_labeled_split(dir.str(), "test"); }).find("no test split found") != std::string::npos);
}

TEST_CASE("load_labeled_split prefers the TSV") {
  TempDir dir;
  write_bytes(dir / "test.tsv", "1\tyes\n");
  CHECK(load_labeled_split(dir.str(), "test").size() == 1);
}

TEST_CASE("read_text: a file, or a directory's files joined in path order") {
  TempDir dir;
  write_bytes(dir / "corpus/b.txt", "second");
  write_bytes(dir / "corpus/a.txt", "first\n");
  write_gz(dir / "corpus/sub/c.gz", "third\n");
  CHECK(read_text(dir / "corpus") == "first\nsecond\nthird\n");
  CHECK(read_text(dir / "corpus/b.txt") == "second");
  CHECK(error_of([&] { read_text(dir / "nothing"); }) == dir / "nothing" + ": no such file or directory");
}

TEST_CASE("read_parallel pairs line i with line i, and rejects files of different lengths") {
  TempDir dir;
  write_bytes(dir / "s.en", "a dog\na cat\n");
  write_gz(dir / "s.de.gz", "ein Hund\neine Katze\n");
  const auto p = read_parallel(dir / "s.en", dir / "s.de.gz");
  REQUIRE(p.size() == 2);
  CHECK(p[1].source == "a cat");
  CHECK(p[1].target == "eine Katze");
  write_bytes(dir / "t.de", "ein Hund\n");
  CHECK(error_of([&] { read_parallel(dir / "s.en", dir / "t.de"); }) ==
        "parallel files differ in length: " + dir / "s.en" + " has 2 lines, " + dir / "t.de" + " has 1");
  write_bytes(dir / "u.de", "ein Hund\n\n");
  CHECK(error_of([&] { read_parallel(dir / "s.en", dir / "u.de"); }) ==
        dir / "u.de" + ":2: expected a sentence, got an empty line (its pair is not empty)");
}

TEST_CASE("read_csv: quoted commas, doubled quotes, CRLF, a last record without a line end") {
  TempDir dir;
  write_gz(dir / "qa.csv.gz",
           "Q,A,label\r\n가족 있어?,\"저를 만들어 준 사람을 부모님, 저랑 이야기해 주는 사람을 친구로\",0\r\n"
           "\"say \"\"hi\"\"\",\"two\nlines\",2   ");
  const auto r = read_csv(dir / "qa.csv.gz");
  REQUIRE(r.size() == 3);
  CHECK(r[0] == std::vector<std::string>{"Q", "A", "label"});
  CHECK(r[1][1] == "저를 만들어 준 사람을 부모님, 저랑 이야기해 주는 사람을 친구로");
  CHECK(r[2][0] == "say \"hi\"");
  CHECK(r[2][1] == "two\nlines");
  CHECK(r[2][2] == "2   ");
  const auto pairs = read_qa_csv(dir / "qa.csv.gz", 3);
  REQUIRE(pairs.size() == 2);
  CHECK(pairs[0].question == "가족 있어?");
  CHECK(pairs[1].label == 2);   // "2   ": the label is trimmed
}

TEST_CASE("read_csv and read_qa_csv: errors name the file and line or record") {
  TempDir dir;
  write_bytes(dir / "short.csv", "Q,A,label\r\na,b,0\r\nc,d\r\n");
  CHECK(error_of([&] { read_csv(dir / "short.csv"); }) == dir / "short.csv" + ":3: expected 3 fields (as the header), got 2");
  write_bytes(dir / "open.csv", "Q,A,label\n\"never closed,b,0\n");
  CHECK(error_of([&] { read_csv(dir / "open.csv"); }) == dir / "open.csv" + ":2: a quoted field is never closed");
  write_bytes(dir / "header.csv", "question,answer\nq,a\n");
  CHECK(error_of([&] { read_qa_csv(dir / "header.csv"); }).find("expected the header `Q,A,label`") != std::string::npos);
  write_bytes(dir / "label.csv", "Q,A,label\nq,a,3\n");
  CHECK(error_of([&] { read_qa_csv(dir / "label.csv", 3); }) == dir / "label.csv" + ": record 1: expected a label from 0 to 2, got `3`");
  write_bytes(dir / "empty.csv", "");
  CHECK(error_of([&] { read_csv(dir / "empty.csv"); }) == dir / "empty.csv" + ": no records (not even a header)");
}

TEST_CASE("read_csv is strict: nothing but a comma or a line end after a closing quote, no quote inside a bare field") {
  TempDir dir;
  // A stray quote that a lenient reader would run on from, merging the records after it.
  write_bytes(dir / "after.csv", "Q,A,label\n\"hi\" there,b,0\nc,d,1\n");
  CHECK(error_of([&] { read_csv(dir / "after.csv"); }) ==
        dir / "after.csv" + ":2: expected a comma or a line end after the quoted field opened on line 2, got ` there,b,0` "
                            "(a quote inside a quoted field is written \"\")");
  write_bytes(dir / "bare.csv", "Q,A,label\nsay \"hi\",b,0\n");
  CHECK(error_of([&] { read_csv(dir / "bare.csv"); }) ==
        dir / "bare.csv" + ":2: a quote inside an unquoted field `say \"`: quote the whole field and write the quote as "
                           "\"\" (RFC 4180)");
  write_bytes(dir / "good.csv", "Q,A,label\r\n\"a, \"\"b\"\"\",c,0\r\n\"x\",\"y\",1");
  CHECK(read_csv(dir / "good.csv")[1][0] == "a, \"b\"");
  CHECK(read_csv(dir / "good.csv")[2] == std::vector<std::string>{"x", "y", "1"});
}

TEST_CASE("a UTF-8 byte order mark is not text: the first label reads") {
  TempDir dir;
  write_bytes(dir / "bom.tsv", "\xEF\xBB\xBF" "0\tgood\n1\tbad\n");
  const auto rows = read_labeled_tsv(dir / "bom.tsv");
  CHECK(rows.size() == 2);
  CHECK(rows[0].label == 0);
  CHECK(read_file(dir / "bom.tsv").starts_with("0\t"));
}

TEST_CASE("data_files: regular files only, hidden entries skipped; devices and pipes refused by name") {
  TempDir dir;
  write_bytes(dir / "corpus/a.txt", "first\n");
  write_bytes(dir / "corpus/.git/objects/x", "not text\n");
  write_bytes(dir / "corpus/.swap", "not text\n");
  write_bytes(dir / "corpus/sub/b.txt", "second\n");
  CHECK(data_files(dir / "corpus") == std::vector<std::string>{dir / "corpus/a.txt", dir / "corpus/sub/b.txt"});
  CHECK(read_text(dir / "corpus") == "first\nsecond\n");
  const std::string zero = "/dev/zero: not a regular file (a character device), expected a file";
  CHECK(error_of([] { read_text("/dev/zero"); }) == zero);
  CHECK(error_of([] { read_file("/dev/zero"); }) == zero);
  std::filesystem::create_symlink("/dev/zero", dir / "zero.txt");
  CHECK(error_of([&] { read_lines(dir / "zero.txt"); }).find("not a regular file") != std::string::npos);
}

TEST_CASE("text larger than a reading may hold is refused with the figures, before it is read") {
  // A sparse file one byte past the bound (an eighth of the memory, at most 16 GiB): no disk
  // taken, and read whole it would have taken the bound in memory before the refusal (or, larger,
  // ended in std::bad_alloc or the kernel's kill).
  TempDir dir;
  const std::string corpus = dir / "corpus", big = dir / "corpus/big.txt";
  write_bytes(big, "a");
  std::filesystem::resize_file(big, max_text_bytes() + 1);
  CHECK(max_text_bytes() <= kMaxFileBytes);
  for (const std::string& what : {error_of([&] { read_file(big); }), error_of([&] { read_text(big); })}) {
    CHECK(what.starts_with(big + ": "));
    CHECK(what.find(" of text, more than one reading may hold here (") != std::string::npos);
  }
  // A directory's files count together, checked before the first is read.
  std::filesystem::resize_file(big, max_text_bytes() / 2 + 1);
  write_bytes(dir / "corpus/big2.txt", "a");
  std::filesystem::resize_file(dir / "corpus/big2.txt", max_text_bytes() / 2 + 1);
  CHECK_NOTHROW(check_text_size(big));
  CHECK(error_of([&] { read_text(corpus); }).starts_with(corpus + ": "));
  CHECK_THROWS(check_text_size(corpus));
}
