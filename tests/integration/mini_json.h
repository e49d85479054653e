// MiniJson: a small JSON reader for tests that parse `sfs --json` output.
// Objects, arrays, strings (with \" \\ \/ \n \t \uXXXX below 0x80), numbers
// (as double; integers up to 2^53 exact), true/false/null. Parse() returns
// nullopt on malformed input or trailing junk.
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sfs::testing {

struct Json {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Json> arr;
  std::map<std::string, Json> obj;

  bool Has(const std::string& k) const { return type == kObject && obj.count(k) > 0; }
  // The member k (a null Json if absent).
  const Json& operator[](const std::string& k) const {
    static const Json kNone;
    auto it = obj.find(k);
    return it == obj.end() ? kNone : it->second;
  }
  int64_t Int() const { return static_cast<int64_t>(num); }
  uint64_t U64() const { return static_cast<uint64_t>(num); }

  static std::optional<Json> Parse(const std::string& s) {
    size_t pos = 0;
    Json out;
    if (!Value(s, pos, &out)) return std::nullopt;
    Skip(s, pos);
    if (pos != s.size()) return std::nullopt;
    return out;
  }

 private:
  static void Skip(const std::string& s, size_t& p) {
    while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
  }
  static bool Lit(const std::string& s, size_t& p, const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s.compare(p, n, word) != 0) return false;
    p += n;
    return true;
  }
  static bool String(const std::string& s, size_t& p, std::string* out) {
    if (p >= s.size() || s[p] != '"') return false;
    for (++p; p < s.size() && s[p] != '"'; ++p) {
      if (s[p] != '\\') { out->push_back(s[p]); continue; }
      if (++p >= s.size()) return false;
      char e = s[p];
      if (e == 'n') out->push_back('\n');
      else if (e == 't') out->push_back('\t');
      else if (e == 'u' && p + 4 < s.size()) {
        out->push_back(static_cast<char>(std::strtol(s.substr(p + 1, 4).c_str(), nullptr, 16)));
        p += 4;
      } else out->push_back(e);
    }
    if (p >= s.size()) return false;
    ++p;
    return true;
  }
  static bool Value(const std::string& s, size_t& p, Json* out) {
    Skip(s, p);
    if (p >= s.size()) return false;
    char c = s[p];
    if (c == '{') {
      out->type = kObject;
      ++p;
      Skip(s, p);
      if (p < s.size() && s[p] == '}') return ++p, true;
      for (;;) {
        std::string key;
        Skip(s, p);
        if (!String(s, p, &key)) return false;
        Skip(s, p);
        if (p >= s.size() || s[p++] != ':') return false;
        if (!Value(s, p, &out->obj[key])) return false;
        Skip(s, p);
        if (p < s.size() && s[p] == ',') { ++p; continue; }
        return p < s.size() && s[p++] == '}';
      }
    }
    if (c == '[') {
      out->type = kArray;
      ++p;
      Skip(s, p);
      if (p < s.size() && s[p] == ']') return ++p, true;
      for (;;) {
        out->arr.emplace_back();
        if (!Value(s, p, &out->arr.back())) return false;
        Skip(s, p);
        if (p < s.size() && s[p] == ',') { ++p; continue; }
        return p < s.size() && s[p++] == ']';
      }
    }
    if (c == '"') { out->type = kString; return String(s, p, &out->str); }
    if (Lit(s, p, "true")) { out->type = kBool; out->b = true; return true; }
    if (Lit(s, p, "false")) { out->type = kBool; return true; }
    if (Lit(s, p, "null")) return true;
    char* end = nullptr;
    out->num = std::strtod(s.c_str() + p, &end);
    if (end == s.c_str() + p) return false;
    out->type = kNumber;
    p = end - s.c_str();
    return true;
  }
};

}  // namespace sfs::testing
