// Installing what the package table (host_commands.hpp) names: the packages ss, the image build
// and each backend need, with apt-get, as root.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

class Progress;

// Where `command` is: on PATH, else in the table's directories for it.
std::optional<std::string> LocateCommand(std::string_view command);

// Installs, as root, the packages of the table's rows that `steps` need ("core", "image", "lxd",
// ...) and that are missing; `what` names who needs them ("building the image"). Returns what it
// installed, in words (empty when nothing was missing). Elsewhere throws ss::Error(69) naming
// what is missing and the apt-get line that installs it.
std::vector<std::string> InstallFor(const std::vector<std::string>& steps, std::string_view what,
                                    Progress& progress);

}  // namespace ss
