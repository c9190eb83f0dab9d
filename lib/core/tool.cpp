#include "tool.hpp"

#include <boost/program_options/errors.hpp>
#include <exception>
#include <iostream>
#include <new>

#include "error.hpp"
#include "output.hpp"
#include "strings.hpp"
#include "suggest.hpp"
#include "version.hpp"

namespace ss {

std::string HelpCommand(std::string_view tool) {
  return tool.rfind("ss-", 0) == 0 ? Cat("ss ", tool.substr(3)) : std::string(tool);
}

Error UsageError(std::string message, std::string_view command, std::vector<std::string> hints) {
  hints.push_back(Cat("see '", command, " --help'"));
  return Error(kExitUsage, std::move(message), {}, std::move(hints));
}

Error UnknownCommandError(const std::string& word, const std::vector<std::string>& commands,
                          std::string_view command) {
  std::vector<std::string> hints;
  if (auto guess = Suggest(word, commands)) hints.push_back(Cat("did you mean '", *guess, "'?"));
  return UsageError(Cat("unknown command '", word, "'"), command, std::move(hints));
}

int RunTool(std::string_view name, int argc, char** argv,
            const std::function<int(const Args&)>& body) {
  SetToolName(name);
  Args args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  try {
    // Every binary says what it is, the same way.
    if (args.size() == 1 && args[0] == "--version") {
      std::string_view binary = argc > 0 ? std::string_view(argv[0]) : name;
      std::cout << VersionLine(binary.substr(binary.rfind('/') + 1)) << "\n";
      return 0;
    }
    int status = body(args);
    std::cout.flush();
    return status;
  } catch (const Error& e) {
    PrintError(e);
    return e.code();
  } catch (const boost::program_options::unknown_option& e) {
    PrintError(UsageError(Cat("unknown option '", e.get_option_name(), "'"), HelpCommand(name)));
    return kExitUsage;
  } catch (const boost::program_options::error& e) {
    PrintError(UsageError(e.what(), HelpCommand(name)));
    return kExitUsage;
  } catch (const std::bad_alloc&) {
    PrintError(Error(kExitSoftware, "out of memory"));
    return kExitSoftware;
  } catch (const std::exception& e) {
    PrintError(Error(kExitSoftware, Cat("internal error: ", e.what()), {},
                     {"this is a bug in ss; please report it with the command you ran"}));
    return kExitSoftware;
  }
}

}  // namespace ss
