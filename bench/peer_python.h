// Running a benchmark peer that lives in Python (peer_torch.cpp, peer_vllm.cpp): the script is
// passed with `python -c`, its arguments after it, and it prints one JSON line as its last output.
#pragma once

#include <string>

namespace bench {

// Runs `script` under `python` with `args` (already separated by spaces) and returns the last
// line that starts a JSON object, or "" with *why set (the interpreter could not start, exited
// non-zero or printed no JSON; the first 200 characters of its output).
std::string run_python_json(const std::string& python, const char* script, const std::string& args, std::string* why);

// The number after "key": in a one-line JSON object (0 if absent).
double json_number(const std::string& s, const char* key);
// The string after "key": in a one-line JSON object ("" if absent; no escapes are decoded).
std::string json_string(const std::string& s, const char* key);

}  // namespace bench
