#include "tool.hpp"

#include <boost/program_options/errors.hpp>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>
#include <boost/program_options/variables_map.hpp>
#include <exception>
#include <iostream>
#include <new>

#include "error.hpp"
#include "output.hpp"
#include "strings.hpp"
#include "version.hpp"

namespace ss {

void ParseWithWords(const Args& args, const boost::program_options::options_description& desc) {
  namespace po = boost::program_options;
  po::positional_options_description pos;
  pos.add("words", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
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
  } catch (const boost::program_options::error& e) {
    PrintError(Error(kExitUsage, e.what(), {}, {Cat("see '", name, " --help'")}));
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
