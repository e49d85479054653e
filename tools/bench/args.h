// Command lines in IOR's and mdtest's style, which getopt cannot parse
// ("-np 4" is one option): options are exact tokens ("-b", "-np", "--json");
// a value is the next token ("-b 64M") or follows '=' in a long option
// ("--mds=host:7700"); single-letter flags may be grouped ("-wrk").
// Sizes take K/M/G suffixes (client::ParseSize).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace sfs::bench {

class ArgParser {
 public:
  // The out pointers must outlive Parse(). help == nullptr hides the option
  // from Help() (test-only flags).
  void Flag(const char* name, bool* out, const char* help);
  void Size(const char* name, uint64_t* out, const char* help);
  void Int(const char* name, int64_t* out, const char* help);
  void Text(const char* name, std::string* out, const char* help);

  // Parses argv[first..argc). EINVAL with a one-line reason for an unknown
  // option, a missing or bad value, or a stray argument. "-h"/"--help"
  // set help_requested() and stop parsing.
  Status Parse(int argc, char** argv, int first = 1);
  bool help_requested() const { return help_; }
  // One line per visible option: "  -b SIZE   block size ...".
  std::string Help() const;

 private:
  enum class Kind { kFlag, kSize, kInt, kText };
  struct Opt {
    std::string name;
    Kind kind;
    void* out;
    const char* help;
  };
  const Opt* Find(const std::string& name) const;
  Status SetValue(const Opt& o, const std::string& value);
  bool TryGroupedFlags(const std::string& tok);

  std::vector<Opt> opts_;
  bool help_ = false;
};

}  // namespace sfs::bench
