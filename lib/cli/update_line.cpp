#include "update_line.hpp"

#include <boost/program_options.hpp>

#include "error.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace po = boost::program_options;

namespace ss {

const char* const kUpdateUsage = R"(usage: ss update [--check]

Check the release feed (updates.feed in config.yaml) for a newer ss and install it: the download
is checked against the release's checksums.txt, and the installed binaries are replaced only
when every new one is in place, so a failed update leaves the old version working.

Options:
  --check     only report the current and the latest version; exit 1 if an update is available
  -h, --help  show this help
)";

UpdateLine ParseUpdateLine(const std::vector<std::string>& args) {
  UpdateLine o;
  po::options_description desc;
  desc.add_options()("check", po::bool_switch(&o.check))(
      "background", po::bool_switch(&o.background))("help,h", po::bool_switch(&o.help));
  po::variables_map vm;
  po::store(po::command_line_parser(args)
                .options(desc)
                .style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing)
                .run(),
            vm);
  po::notify(vm);
  return o;
}

}  // namespace ss
