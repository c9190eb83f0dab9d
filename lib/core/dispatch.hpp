// The verbs of `ss` and the binary that owns each. One table: the dispatcher, `ss commands`,
// `ss help VERB` and the completions all read it.
#pragma once

#include <string>
#include <vector>

namespace ss {

struct Verb {
  std::string name;                 // "new"
  std::string binary;               // "ss-project"
  std::vector<std::string> prefix;  // arguments put before the user's: {"new"}
  std::string summary;
  std::string manual;  // manual page: "ss-project"
  std::string manual_section = "1";
};

const std::vector<Verb>& Verbs();
const Verb* FindVerb(const std::string& name);
std::vector<std::string> VerbNames();

// Whether `word` is one that iproute2's ss(8) takes as the first word of a filter
// ("ss state established", "ss dst 10.0.0.1"): such a call goes to iproute2, so no project may
// have that name.
bool IsIproute2Word(const std::string& word);

}  // namespace ss
