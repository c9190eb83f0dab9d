// The skeleton every ss binary shares:
//
//   int main(int argc, char** argv) {
//     return ss::RunTool("ss-vm", argc, argv, [](const ss::Args& args) { ... return 0; });
//   }
//
// RunTool sets the message prefix, catches every exception once and turns it into the one
// message shape and an exit status. Nothing else in ss calls exit().
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace boost::program_options {
class options_description;
}

namespace ss {

using Args = std::vector<std::string>;  // argv without argv[0]

// Parses `args` against `desc`, every word that is not an option going to the option "words"
// (which `desc` declares), and stores the values into their variables.
void ParseWithWords(const Args& args, const boost::program_options::options_description& desc);

int RunTool(std::string_view name, int argc, char** argv,
            const std::function<int(const Args&)>& body);

}  // namespace ss
