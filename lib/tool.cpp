#include "tool.hpp"

#include <boost/program_options/errors.hpp>
#include <exception>
#include <iostream>
#include <new>

#include "error.hpp"
#include "output.hpp"
#include "strings.hpp"

namespace ss {

int RunTool(std::string_view name, int argc, char** argv,
            const std::function<int(const Args&)>& body) {
  SetToolName(name);
  Args args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  try {
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
