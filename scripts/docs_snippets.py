#!/usr/bin/env python3
"""Turns every C++ code block of the docs into a test: the course's code compiles and runs in CI.

    scripts/docs_snippets.py OUT.cpp FILE.md...     write one C++ file holding every ```cpp block
    scripts/docs_snippets.py --list FILE.md...      print each block's name and first line
    scripts/docs_snippets.py --pages ROOT           print the pages meson gives it (README, docs/)
    scripts/docs_snippets.py --check ROOT           the course's consistency (a test of scripts/test.sh):
        the Korean edition docs/ko/ has exactly the English chapters, each with the same ```cpp and
        ```output blocks in the same order and as many fenced blocks in all — a program's // comments
        aside, so each edition comments in its own language; every exercise a
        chapter names ("*exercise 4.1*") has its solution, TEST_CASE("exercise 4.1: …"), in
        tests/docs/test_exercises.cpp and every solution is named by a chapter; every image a page
        shows exists.

Every ```cpp block in the given Markdown files must be a complete program (it has `int main()`).
A block fenced as ```output right after it is the program's expected standard output; the test
fails when what the program prints drifts from it. The generated file wraps each program in its
own namespace (its #include lines hoisted to the top), renames its main (which must come last in
the block; a `return 0;` is added at its end, as main has implicitly) and adds a driver:

    test_docs            run every program, compare outputs, print the counts (doctest's format,
                         so scripts/test.sh counts each program as a test case)
    test_docs NAME...    run only these (names as --list prints them: 03_transformer.md:2)

Blocks of the Korean edition (docs/ko/) that equal a block of the English one but for their //
comments are compiled once, as the English block (what the compiler sees of them is the same).
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^```(\w*)\s*$")


def shown(path):
    """The path relative to the repository (how errors and #line name it), else as given."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def blocks(path):
    """(language, first line number, text) of each fenced block of a Markdown file."""
    out, lang, start, lines = [], None, 0, []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line)
        if lang is None and m:
            lang, start, lines = m.group(1), n, []
        elif lang is not None and line.strip() == "```":
            out.append((lang, start, "\n".join(lines) + "\n"))
            lang = None
        elif lang is not None:
            lines.append(line)
    if lang is not None:
        sys.exit(f"{path}:{start}: a ``` block is never closed")
    return out


def without_comments(code):
    """The code as the compiler sees it, but for layout: each line without its // comment (outside
    string and character literals) and trailing spaces. A comment ending in a backslash would
    continue onto the next line and hide it: such a block is refused, not compared."""
    out = []
    for n, line in enumerate(code.splitlines(), 1):
        quote, i, cut = None, 0, len(line)
        while i < len(line):
            c = line[i]
            if quote:
                if c == "\\":
                    i += 1
                elif c == quote:
                    quote = None
            elif c == '"' or (c == "'" and not (i > 0 and line[i - 1].isalnum())):   # not 1'000
                quote = c
            elif line.startswith("//", i):
                cut = i
                break
            i += 1
        if cut < len(line) and line.rstrip().endswith("\\"):
            sys.exit(f"a // comment ends in a backslash (line {n} of the block): it would hide the next line")
        out.append(line[:cut].rstrip())
    return "\n".join(out) + "\n"


def programs(paths):
    """(name, where, code, expected output or None) for every ```cpp block, duplicates once."""
    seen, out = set(), []
    for path in paths:
        found = blocks(path)
        count = 0
        for i, (lang, line, text) in enumerate(found):
            if lang != "cpp":
                continue
            count += 1
            where = f"{shown(path)}:{line}"
            if not re.search(r"\bint\s+main\s*\(", text):
                sys.exit(f"{where}: a ```cpp block of the docs must be a complete program with int main()")
            expected = None
            if i + 1 < len(found) and found[i + 1][0] == "output":
                expected = found[i + 1][2]
            if (without_comments(text), expected) in seen:
                continue
            seen.add((without_comments(text), expected))
            out.append((f"{Path(path).name}:{count}", where, text, expected))
    return out


def cpp_string(s):
    return "R\"ctrax_doc(" + s + ")ctrax_doc\""


def generate(progs):
    includes, bodies, table = set(), [], []
    for k, (name, where, text, expected) in enumerate(progs):
        body = []
        for line in text.splitlines():
            if line.startswith("#include"):
                includes.add(line.strip())
                body.append("")   # keeps the #line numbering of the lines after it
            else:
                body.append(line)
        code = "\n".join(body).rstrip()
        code = re.sub(r"\bint\s+main\s*\(", "int snippet_main(", code, count=1)
        if not code.endswith("}"):
            sys.exit(f"{where}: main must be the block's last definition")
        code = code[:-1] + "  return 0;\n}"
        bodies.append(f"// {where}\nnamespace snippet_{k} {{\n#line {int(where.rsplit(':', 1)[1]) + 1} "
                      f"\"{where.rsplit(':', 1)[0]}\"\n{code}\n}}  // namespace snippet_{k}\n")
        exp = "nullptr" if expected is None else cpp_string(expected)
        table.append(f"    {{\"{name}\", \"{where}\", [] {{ return snippet_{k}::snippet_main(); }}, {exp}}},")
    driver_includes = ["#include <cstdio>", "#include <cstdlib>", "#include <cstring>", "#include <exception>",
                       "#include <functional>", "#include <iostream>", "#include <string>", "#include <unistd.h>",
                       "#include <vector>"]
    return ("// Generated by scripts/docs_snippets.py from the docs' ```cpp blocks. Do not edit.\n"
            + "\n".join(sorted(includes | set(driver_includes))) + "\n\n"
            + "\n".join(bodies)
            + DRIVER.replace("@TABLE@", "\n".join(table)))


DRIVER = r"""
namespace {

struct Program {
  const char* name;
  const char* where;
  std::function<int()> run;
  const char* expected;   // nullptr: output not checked
};

enum class Outcome { passed, failed, skipped };

// Runs one program with its standard output captured in a temporary file.
Outcome run_one(const Program& p) {
  std::fflush(stdout);
  std::cout.flush();
  char path[] = "/tmp/ctrax_doc_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) { std::perror("mkstemp"); return Outcome::failed; }
  const int saved = dup(1);
  dup2(fd, 1);
  int status = 0;
  std::string error;
  try {
    status = p.run();
  } catch (const std::exception& e) {
    error = e.what();
    status = 1;
  }
  std::fflush(stdout);
  std::cout.flush();
  dup2(saved, 1);
  close(saved);
  std::string out;
  lseek(fd, 0, SEEK_SET);
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  close(fd);
  unlink(path);
  if (status != 0) {
    std::printf("FAILED %s (%s): exit status %d%s%s\n%s", p.name, p.where, status, error.empty() ? "" : ": ",
                error.c_str(), out.c_str());
    return Outcome::failed;
  }
  if (p.expected != nullptr && out != p.expected) {
    // The docs show what a program prints by default; CTRAX_PLAN=0 (the plan off, for learning and
    // debugging) changes what the plan's programs print, as the docs say it does.
    const char* plan = std::getenv("CTRAX_PLAN");
    if (plan != nullptr && std::strcmp(plan, "0") == 0) {
      std::printf("skipped %s (%s): its output differs from the docs', which show the plan on, and CTRAX_PLAN=0 "
                  "is set\n", p.name, p.where);
      return Outcome::skipped;
    }
    std::printf("FAILED %s (%s): its output is not the one the docs show.\n--- the docs show:\n%s--- it printed:\n%s",
                p.name, p.where, p.expected, out.c_str());
    return Outcome::failed;
  }
  std::printf("ok %s (%s)%s\n", p.name, p.where, p.expected ? ", output as shown" : "");
  return Outcome::passed;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Program> programs = {
@TABLE@
  };
  int passed = 0, failed = 0, skipped = 0;
  for (const Program& p : programs) {
    bool wanted = argc == 1;
    for (int i = 1; i < argc; ++i)
      if (std::strncmp(argv[i], "--", 2) != 0) wanted = wanted || std::strcmp(argv[i], p.name) == 0;
    if (!wanted) {   // only options given (scripts/test.sh passes doctest's --no-intro): run all
      wanted = true;
      for (int i = 1; i < argc; ++i) wanted = wanted && std::strncmp(argv[i], "--", 2) == 0;
    }
    if (!wanted) continue;
    const Outcome o = run_one(p);
    (o == Outcome::passed ? passed : o == Outcome::failed ? failed : skipped)++;
  }
  std::printf("[doctest] test cases: %d | %d passed | %d failed | %d skipped\n", passed + failed + skipped, passed,
              failed, skipped);
  return failed == 0 && passed > 0 ? 0 : 1;
}
"""


def check(root):
    """The course's consistency; returns the problems found (empty: all is well)."""
    docs, ko = root / "docs", root / "docs" / "ko"
    problems = []
    english = sorted(p.name for p in docs.glob("*.md"))
    korean = sorted(p.name for p in ko.glob("*.md")) if ko.is_dir() else []
    for name in sorted(set(english) ^ set(korean)):
        problems.append(f"docs/{name} has no Korean edition docs/ko/{name}" if name in english
                        else f"docs/ko/{name} has no English original docs/{name}")
    for name in sorted(set(english) & set(korean)):
        en, kr = blocks(docs / name), blocks(ko / name)
        def code(found):
            return [(lang, without_comments(text) if lang == "cpp" else text) for lang, _, text in found
                    if lang in ("cpp", "output")]
        code_en, code_kr = code(en), code(kr)
        if code_en != code_kr:
            for i, (a, b) in enumerate(zip(code_en + [None] * len(code_kr), code_kr + [None] * len(code_en))):
                if a != b:
                    problems.append(f"docs/ko/{name}: ```cpp/```output block {i + 1} differs from docs/{name}'s "
                                    "(the editions must show the same programs, comments aside, and outputs)")
                    break
        if len(en) != len(kr):
            problems.append(f"docs/ko/{name}: {len(kr)} fenced blocks, docs/{name} has {len(en)}")
    named = {}
    for page in sorted(docs.glob("*.md")):
        for m in re.finditer(r"\*exercise (\d+\.\d+)\*", page.read_text(encoding="utf-8")):
            named.setdefault(m.group(1), f"docs/{page.name}")
    solutions_file = root / "tests" / "docs" / "test_exercises.cpp"
    solved = set(re.findall(r'TEST_CASE\("exercise (\d+\.\d+):', solutions_file.read_text(encoding="utf-8")))
    for e in sorted(set(named) - solved):
        problems.append(f"{named[e]}: exercise {e} has no solution TEST_CASE(\"exercise {e}: …\") in tests/docs/test_exercises.cpp")
    for e in sorted(solved - set(named)):
        problems.append(f"tests/docs/test_exercises.cpp: exercise {e} is named by no chapter")
    for page in [root / "README.md"] + sorted(docs.glob("*.md")) + sorted(ko.glob("*.md")):
        for m in re.finditer(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text(encoding="utf-8")):
            if not (page.parent / m.group(1)).is_file():
                problems.append(f"{shown(page)}: the image {m.group(1)} does not exist")
    return problems


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    if args[0] == "--pages":
        root = Path(args[1])
        pages = [root / "README.md"] + sorted((root / "docs").glob("*.md")) + sorted((root / "docs").glob("ko/*.md"))
        print("\n".join(str(p) for p in pages))
        return
    if args[0] == "--check":
        problems = check(Path(args[1]))
        for p in problems:
            print(p)
        print(f"[doctest] test cases: 1 | {0 if problems else 1} passed | {1 if problems else 0} failed | 0 skipped")
        sys.exit(1 if problems else 0)
    if args[0] == "--list":
        for name, where, text, expected in programs(args[1:]):
            print(f"{name}\t{where}\t{'output checked' if expected is not None else ''}")
        return
    out, paths = args[0], args[1:]
    Path(out).write_text(generate(programs(paths)), encoding="utf-8")


if __name__ == "__main__":
    main()
