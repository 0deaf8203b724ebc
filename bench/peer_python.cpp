// Running a Python benchmark peer (peer_python.h).
#include "bench/peer_python.h"

#include <array>
#include <cstdio>
#include <cstdlib>

namespace bench {
namespace {

// Single quotes around `s` for /bin/sh ('\'' for each quote inside).
std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string run_python_json(const std::string& python, const char* script, const std::string& args, std::string* why) {
  const std::string cmd = sh_quote(python) + " -c " + sh_quote(script) + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) {
    *why = "cannot start " + python;
    return "";
  }
  std::string out;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), f) != nullptr) out += buf.data();
  const int rc = pclose(f);
  const size_t brace = out.rfind("{\"");
  std::string line = brace == std::string::npos ? "" : out.substr(brace);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (rc != 0 || line.empty()) {
    *why = python + " failed: " + out.substr(0, 200);
    return "";
  }
  return line;
}

double json_number(const std::string& s, const char* key) {
  const size_t at = s.find(std::string("\"") + key + "\":");
  return at == std::string::npos ? 0.0 : std::atof(s.c_str() + at + std::string(key).size() + 3);
}

std::string json_string(const std::string& s, const char* key) {
  const std::string k = std::string("\"") + key + "\": \"";
  const size_t at = s.find(k);
  if (at == std::string::npos) return "";
  const size_t end = s.find('"', at + k.size());
  return s.substr(at + k.size(), end == std::string::npos ? std::string::npos : end - at - k.size());
}

}  // namespace bench
