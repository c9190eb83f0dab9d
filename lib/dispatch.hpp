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

}  // namespace ss
