// The rule, check-site and feature coverage table of an operator (docs/testing.md, "Coverage tables"):
//   rule_coverage --root DIR --prefix FIA [--features FILE] --rules-doc FILE --doc FILE [--write]
// scans the library sources (api/ core/ kernels/ ops/) for the rule ids PREFIX-nn inside string
// literals (adjacent literals joined: the messages of the check sites), the test sources (tests/,
// examples/) for the same ids inside string literals (the negative tests match the message),
// attributing each to the enclosing TEST / TEST_P / TEST_F, and the operator's page
// (docs/ops/*.md rule table rows "| PREFIX-nn |"); reads the feature rows (FILE, tab-separated:
// row, feature, status, tests).
// A check site is a library literal naming a rule id; its tag is the literal's text from the id
// to the first '%' or ';' ("MP-14 B*S overflows int64", "MP-07 He", or the bare id "FIA-03" of a
// table row): the words of the message that name the site. Sites with the same tag are one entry
// (table rows of one rule). A test literal hits the entry whose tag equals its own tag, or the
// one entry of the rule whose tag starts with it.
// It generates the coverage page and fails (exit 1), naming them, when
//   * a rule id of the code has no test, or is not in the rule table of the docs (or the docs
//     list a rule the code does not have);
//   * a check-site tag has no test that names it and is not listed, with its reason, in the
//     exceptions file (--exceptions: "tag<TAB>reason" lines), or a listed tag has a test or is no site;
//   * a direct site's tag is words a check helper could print for another site of the rule;
//   * a supported feature row names no test, or any row names a test that does not exist;
//   * the page differs from the generated text (--write rewrites it).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Hit {
  std::string file;
  int line = 0;
  std::string test;  // enclosing test (tests only): "Suite.Name", or "" outside any test
  bool helper = false;  // the literal is only the tag: an argument of a check helper (ops/common/check_util.h)
};

// What the check helpers (ops/common/check_util.cpp, the length arrays of FIA) print after the rule they are given ("*": any text).
constexpr const char* kHelperPhrases[] = {"dtype",      "value",      "shape",
                                          "format",     "dim count",  "must be contiguous (row-major dense)",
                                          "data pointer", "tensor too large (size overflows int64), shape",
                                          "is required *", "must be absent (null) *", "must not overlap *",
                                          // the length-array helpers of ops/fia/fia_check.cpp
                                          "length", "value [", "length of the cumulative array"};

// A direct site's tag the message of a helper site (tag `helper`) of the same rule can contain:
// "<helper> <phrase>..." starts with `tag`. Such a pair cannot be told apart by the message.
bool helper_could_print(const std::string& helper, const std::string& tag) {
  if (tag.size() <= helper.size() + 1 || tag.compare(0, helper.size(), helper) != 0 || tag[helper.size()] != ' ')
    return false;
  const std::string rest = tag.substr(helper.size() + 1);
  for (const std::string p : kHelperPhrases) {
    if (p.back() == '*') {
      const std::string head = p.substr(0, p.size() - 1);
      if (rest.compare(0, head.size(), head) == 0 || head.compare(0, rest.size(), rest) == 0) return true;
    } else if (p.compare(0, rest.size(), rest) == 0) {
      return true;
    }
  }
  return false;
}

bool source_file(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".cpp" || e == ".h" || e == ".c";
}

// The text of every string literal of a C / C++ source, with its line (comments and character
// literals skipped; adjacent literals stay separate, which is fine for ids of 5-6 characters).
std::vector<std::pair<int, std::string>> string_literals(const std::string& src) {
  std::vector<std::pair<int, std::string>> out;
  int line = 1;
  size_t i = 0;
  const size_t n = src.size();
  while (i < n) {
    const char c = src[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      while (i < n && src[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(src[i] == '*' && src[i + 1] == '/')) {
        if (src[i] == '\n') ++line;
        ++i;
      }
      i += 2;
    } else if (c == '\'') {
      ++i;
      while (i < n && src[i] != '\'') i += src[i] == '\\' ? 2 : 1;
      ++i;
    } else if (c == '"') {
      const int at = line;
      std::string s;
      for (bool more = true; more;) {
        ++i;
        while (i < n && src[i] != '"') {
          if (src[i] == '\\' && i + 1 < n) {
            s += src[i + 1];
            i += 2;
            continue;
          }
          if (src[i] == '\n') ++line;
          s += src[i++];
        }
        ++i;
        size_t j = i;  // an adjacent literal, after white space only, continues this one
        while (j < n && std::isspace(static_cast<unsigned char>(src[j]))) ++j;
        more = j < n && src[j] == '"';
        if (more) {
          for (; i < j; ++i) line += src[i] == '\n';
        }
      }
      out.emplace_back(at, s);
    } else {
      ++i;
    }
  }
  return out;
}

// Rule ids PREFIX-nn (two or more digits, not followed by a digit or a letter) in `s`.
std::vector<std::string> rule_ids(const std::string& s, const std::string& prefix) {
  std::vector<std::string> ids;
  const std::string key = prefix + "-";
  for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + 1)) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(s[at - 1])) || s[at - 1] == '-')) continue;
    size_t e = at + key.size();
    while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
    if (e - (at + key.size()) < 2) continue;
    if (e < s.size() && std::isalpha(static_cast<unsigned char>(s[e]))) continue;
    ids.push_back(s.substr(at, e - at));
  }
  return ids;
}

// The tag of each rule id in `s`: the text from the id to the first '%' or ';' (or the end),
// without trailing spaces and punctuation.
std::vector<std::string> rule_tags(const std::string& s, const std::string& prefix) {
  std::vector<std::string> tags;
  size_t from = 0;
  for (const std::string& id : rule_ids(s, prefix)) {
    const size_t at = s.find(id, from);
    from = at + 1;
    size_t e = s.find_first_of("%;", at);
    if (e == std::string::npos) e = s.size();
    while (e > at + id.size() && (std::isspace(static_cast<unsigned char>(s[e - 1])) || std::strchr(":,.", s[e - 1])))
      --e;
    tags.push_back(s.substr(at, e - at));
  }
  return tags;
}

// The site entry a test's tag `t` names among the tags of its rule (sorted): the equal tag; else
// the only tag that starts with `t`; else the longest tag that `t` starts with (at a word end).
std::string named_entry(const std::string& t, const std::vector<std::string>& tags) {
  if (std::find(tags.begin(), tags.end(), t) != tags.end()) return t;
  std::string only;
  int starts = 0;
  for (const std::string& e : tags)
    if (e.compare(0, t.size(), t) == 0) {
      ++starts;
      only = e;
    }
  if (starts == 1) return only;
  std::string best;
  for (const std::string& e : tags)
    if (t.size() > e.size() && t.compare(0, e.size(), e) == 0 && !std::isalnum(static_cast<unsigned char>(t[e.size()])) &&
        e.size() > best.size())
      best = e;
  return best;
}

// The tests a source defines, by line: TEST(Suite, Name) / TEST_P / TEST_F headers.
std::vector<std::pair<int, std::string>> test_headers(const std::string& src) {
  std::vector<std::pair<int, std::string>> out;
  std::istringstream in(src);
  int line = 0;
  for (std::string l; std::getline(in, l);) {
    ++line;
    size_t p = 0;
    while (p < l.size() && l[p] == ' ') ++p;
    for (const char* m : {"TEST(", "TEST_P(", "TEST_F("}) {
      if (l.compare(p, std::strlen(m), m) != 0) continue;
      const size_t a = p + std::strlen(m), comma = l.find(',', a), close = l.find(')', a);
      if (comma == std::string::npos || close == std::string::npos || close < comma) break;
      auto trim = [](std::string s) {
        s.erase(0, s.find_first_not_of(' '));
        s.erase(s.find_last_not_of(' ') + 1);
        return s;
      };
      out.emplace_back(line, trim(l.substr(a, comma - a)) + "." + trim(l.substr(comma + 1, close - comma - 1)));
      break;
    }
  }
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> sources(const fs::path& root, const std::vector<std::string>& dirs) {
  std::vector<fs::path> out;
  for (const std::string& d : dirs) {
    std::error_code ec;
    if (!fs::exists(root / d, ec)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / d, ec))
      if (e.is_regular_file() && source_file(e.path())) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Feature {
  std::string row, name, status;
  std::vector<std::string> tests;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  for (std::string& x : out) {
    x.erase(0, x.find_first_not_of(' '));
    x.erase(x.find_last_not_of(' ') + 1);
  }
  return out;
}

// Rule order: numeric by the digits after the prefix.
bool rule_less(const std::string& a, const std::string& b) {
  const size_t da = a.find('-'), db = b.find('-');
  const long na = std::stol(a.substr(da + 1)), nb = std::stol(b.substr(db + 1));
  return na != nb ? na < nb : a < b;
}

}  // namespace

int main(int argc, char** argv) {
  std::string root_s = ".", prefix = "FIA", features_s, doc_s, ops_doc_s, exceptions_s;
  bool write = false, list_tags = false;  // --list-tags: print "tag<TAB>file:line" per site and stop
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--root") root_s = val();
    else if (a == "--prefix") prefix = val();
    else if (a == "--features") features_s = val();
    else if (a == "--doc") doc_s = val();
    else if (a == "--rules-doc") ops_doc_s = val();
    else if (a == "--write") write = true;
    else if (a == "--list-tags") list_tags = true;
    else if (a == "--exceptions") exceptions_s = val();
    else {
      std::fprintf(stderr,
                   "usage: rule_coverage --root DIR --prefix FIA [--features FILE] [--exceptions FILE] --rules-doc FILE --doc FILE "
                   "[--write]\n");
      return 2;
    }
  }
  const fs::path root(root_s);
  std::vector<std::string> problems;

  // Check sites: rule ids in the library's string literals, by tag.
  std::map<std::string, std::vector<Hit>> sites;
  std::map<std::string, std::map<std::string, std::vector<Hit>>> tagged;  // id -> tag -> sites
  for (const fs::path& f : sources(root, {"api", "core", "kernels", "ops"}))
    for (const auto& [line, lit] : string_literals(read(f)))
      for (const std::string& tag : rule_tags(lit, prefix)) {
        const Hit h{fs::relative(f, root).string(), line, "", lit.compare(0, tag.size(), tag) == 0 && lit.size() == tag.size()};
        const std::string id = rule_ids(tag, prefix)[0];
        sites[id].push_back(h);
        tagged[id][tag].push_back(h);
      }
  std::map<std::string, std::vector<std::string>> tags_of;  // id -> its tags, sorted
  for (const auto& [id, m] : tagged)
    for (const auto& kv : m) tags_of[id].push_back(kv.first);
  std::map<std::string, std::set<std::string>> site_tests;  // tag -> tests
  if (list_tags) {
    for (const auto& [id, m] : tagged)
      for (const auto& [tag, hits] : m)
        for (const Hit& h : hits) std::printf("%s\t%s:%d\n", tag.c_str(), h.file.c_str(), h.line);
    return 0;
  }
  // Tests: rule ids in test string literals, by enclosing test; and every test that exists.
  std::map<std::string, std::set<std::string>> tests_of;
  std::set<std::string> all_tests;
  for (const fs::path& f : sources(root, {"tests", "examples"})) {
    const std::string src = read(f);
    const auto heads = test_headers(src);
    for (const auto& h : heads) all_tests.insert(h.second);
    const std::string rel = fs::relative(f, root).string();
    for (const auto& [line, lit] : string_literals(src)) {
      const std::vector<std::string> ids = rule_ids(lit, prefix);
      if (ids.empty()) continue;
      std::string test;
      for (const auto& h : heads)
        if (h.first <= line) test = h.second;
      for (const std::string& id : ids) tests_of[id].insert(test.empty() ? rel : test);
      for (const std::string& t : rule_tags(lit, prefix)) {
        const std::string e = named_entry(t, tags_of[rule_ids(t, prefix)[0]]);
        if (!e.empty()) site_tests[e].insert(test.empty() ? rel : test);
      }
    }
  }
  // The operator page's rule table.
  std::set<std::string> documented;
  {
    std::istringstream in(read(root / ops_doc_s));
    for (std::string l; std::getline(in, l);) {
      if (l.rfind("| " + prefix + "-", 0) != 0) continue;
      const std::vector<std::string> ids = rule_ids(l.substr(0, l.find('|', 2)), prefix);
      if (!ids.empty()) documented.insert(ids[0]);
    }
  }
  std::vector<std::string> ids;
  for (const auto& s : sites) ids.push_back(s.first);
  std::sort(ids.begin(), ids.end(), rule_less);
  for (const std::string& id : ids) {
    if (tests_of[id].empty()) problems.push_back(id + ": no test names this rule");
    if (documented.count(id) == 0) problems.push_back(id + ": not in the rule table of " + ops_doc_s);
  }
  for (const std::string& id : ids)  // every pair of tags the messages can tell apart
    for (const auto& [h, hh] : tagged[id]) {
      bool is_helper = false;
      for (const Hit& x : hh) is_helper = is_helper || x.helper;
      if (!is_helper) continue;
      for (const auto& [t, th] : tagged[id])
        if (helper_could_print(h, t))
          problems.push_back("check site \"" + t + "\" (" + th[0].file + ":" + std::to_string(th[0].line) +
                             "): the helper site \"" + h + "\" (" + hh[0].file + ":" + std::to_string(hh[0].line) +
                             ") can print the same words; reword the site");
    }
  // Sites without a negative test, each with its reason (FILE: tag<TAB>reason a line): listed on
  // the page; a listed tag that is no site, or that a test names, is a problem.
  std::map<std::string, std::string> excepted;
  if (!exceptions_s.empty()) {
    std::istringstream in(read(root / exceptions_s));
    for (std::string l; std::getline(in, l);) {
      if (l.empty() || l[0] == '#') continue;
      const size_t tab = l.find('\t');
      const std::string tag = l.substr(0, tab), why = tab == std::string::npos ? "" : l.substr(tab + 1);
      if (why.empty()) problems.push_back(exceptions_s + ": no reason given for \"" + tag + "\"");
      const std::vector<std::string> rid = rule_ids(tag, prefix);
      if (rid.empty() || tagged[rid[0]].count(tag) == 0)
        problems.push_back(exceptions_s + ": \"" + tag + "\" is not a check site");
      else if (!site_tests[tag].empty())
        problems.push_back(exceptions_s + ": \"" + tag + "\" has a test now; remove it from the list");
      excepted[tag] = why;
    }
  }
  int site_entries = 0, site_excepted = 0;
  for (const std::string& id : ids)
    for (const std::string& tag : tags_of[id]) {
      ++site_entries;
      site_excepted += excepted.count(tag) > 0 && site_tests[tag].empty();
      if (site_tests[tag].empty() && excepted.count(tag) == 0) {
        std::string at;
        for (const Hit& h : tagged[id][tag]) at += (at.empty() ? "" : ", ") + h.file + ":" + std::to_string(h.line);
        problems.push_back("check site \"" + tag + "\" (" + at + "): no test names it");
      }
    }
  for (const std::string& id : documented)
    if (sites.count(id) == 0) problems.push_back(id + ": in the rule table of " + ops_doc_s + " but no check site");

  // Feature rows.
  std::vector<Feature> feats;
  if (!features_s.empty()) {
    std::istringstream in(read(root / features_s));
    for (std::string l; std::getline(in, l);) {
      if (l.empty() || l[0] == '#') continue;
      const std::vector<std::string> c = split(l, '\t');
      if (c.size() != 4) {
        problems.push_back(features_s + ": a row without 4 tab-separated columns: " + l.substr(0, 40));
        continue;
      }
      Feature f{c[0], c[1], c[2], {}};
      for (const std::string& t : split(c[3], ','))
        if (!t.empty()) f.tests.push_back(t);
      for (const std::string& t : f.tests) {
        bool found = all_tests.count(t) > 0;
        if (!found && t.size() > 2 && t.compare(t.size() - 2, 2, ".*") == 0) {
          const std::string suite = t.substr(0, t.size() - 1);
          for (const std::string& x : all_tests) found = found || x.rfind(suite, 0) == 0;
        }
        if (!found) problems.push_back("feature row " + f.row + ": test " + t + " does not exist");
      }
      if (f.status == "supported" && f.tests.empty()) problems.push_back("feature row " + f.row + ": supported, no test");
      feats.push_back(f);
    }
  }

  // The page.
  std::ostringstream md;
  md << "# " << prefix << " coverage\n\n"
     << "Generated by `tests/support/rule_coverage.cpp` from the code"
     << (features_s.empty() ? std::string(" and the tests") : ", the tests and `" + features_s + "`")
     << " (docs/testing.md, \"Coverage tables\"); the `coverage` test fails when this page is stale, "
     << (features_s.empty() ? "" : "a supported feature row, ")
     << "a rule or a check site has no test, or a rule is missing from the rule table.\n\n";
  if (!features_s.empty()) md << "## Feature rows\n\n| row | feature | status | tests |\n|---|---|---|---|\n";
  int supported = 0;
  for (const Feature& f : feats) {
    supported += f.status == "supported";
    std::string t;
    for (const std::string& x : f.tests) t += (t.empty() ? "`" : ", `") + x + "`";
    md << "| " << f.row << " | " << f.name << " | " << f.status << " | " << t << " |\n";
  }
  md << "\n## Rules\n\n| rule | check sites | tests naming it |\n|---|---|---|\n";
  for (const std::string& id : ids) {
    std::map<std::string, int> per_file;
    for (const Hit& h : sites[id]) ++per_file[h.file];
    std::string s, t;
    for (const auto& [f, k] : per_file) s += (s.empty() ? "" : ", ") + f + " (" + std::to_string(k) + ")";
    for (const std::string& x : tests_of[id]) t += (t.empty() ? "`" : ", `") + x + "`";
    md << "| " << id << " | " << s << " | " << t << " |\n";
  }
  md << "\n## Check sites\n\nA site is a message literal of the library naming the rule; its tag is the message's "
        "text from the rule id to the first `%` or `;`. Sites with one tag (the rows of a support table) are one "
        "entry.\n\n| site tag | sites | tests naming it |\n|---|---|---|\n";
  for (const std::string& id : ids)
    for (const std::string& tag : tags_of[id]) {
      std::map<std::string, int> per_file;
      for (const Hit& h : tagged[id][tag]) ++per_file[h.file];
      std::string sf, t;
      for (const auto& [f, k] : per_file) sf += (sf.empty() ? "" : ", ") + f + " (" + std::to_string(k) + ")";
      for (const std::string& x : site_tests[tag]) t += (t.empty() ? "`" : ", `") + x + "`";
      if (t.empty() && excepted.count(tag)) t = "no test: " + excepted[tag];
      std::string shown;
      for (char c : tag) shown += c == '|' ? std::string("\\|") : std::string(1, c);
      md << "| " << shown << " | " << sf << " | " << t << " |\n";
    }
  md << "\n";
  if (!features_s.empty()) md << feats.size() << " feature rows (" << supported << " supported), ";
  md << ids.size() << " rules, " << site_entries << " check-site tags (" << site_excepted << " without a test, listed in `"
     << (exceptions_s.empty() ? "-" : exceptions_s) << "` with the reason).\n";
  const std::string text = md.str();
  const fs::path doc = root / doc_s;
  if (write) {
    std::ofstream(doc, std::ios::binary) << text;
    std::printf("wrote %s\n", doc.string().c_str());
  } else if (read(doc) != text) {
    problems.push_back(doc_s + " is stale: run rule_coverage with --write (see docs/testing.md)");
  }
  std::printf("%s coverage: %zu feature rows (%d supported), %zu rules, %d check-site tags (%d without a test), %zu tests "
              "scanned\n",
              prefix.c_str(), feats.size(), supported, ids.size(), site_entries, site_excepted, all_tests.size());
  for (const std::string& p : problems) std::printf("  problem: %s\n", p.c_str());
  return problems.empty() ? 0 : 1;
}
