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

#include "error.hpp"

namespace ss {

using Args = std::vector<std::string>;  // argv without argv[0]

// How a user asks for a tool's help: "ss vm" for ss-vm, "ss snap" for ss-snap.
std::string HelpCommand(std::string_view tool);

// The one shape of a command-line mistake (exit 64): `message`, then `hints`, then
// "see 'COMMAND --help'", where COMMAND is how the user reaches the help of what they typed
// ("ss restore", "ss vm").
//   ss-snap: error: usage: ss restore NAME
//   hint: see 'ss restore --help'
// (The few messages the spec words otherwise, Error::AsBlock and AsPlain, are listed in ss(1),
// DIAGNOSTICS; nothing else uses those styles.)
Error UsageError(std::string message, std::string_view command,
                 std::vector<std::string> hints = {});

// "unknown command 'WORD'", a did-you-mean among `commands` when one is close, and the help:
// UsageError's shape.
Error UnknownCommandError(const std::string& word, const std::vector<std::string>& commands,
                          std::string_view command);

int RunTool(std::string_view name, int argc, char** argv,
            const std::function<int(const Args&)>& body);

}  // namespace ss
