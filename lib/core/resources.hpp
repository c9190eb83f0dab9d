// Files of the source tree compiled into the binaries (see lib/cmake/embed.cmake): the project
// scaffold templates, cloud-init templates and shell/, everything that runs in the sandbox.
// Names are paths relative to the repository root: "lib/templates/AGENTS.md",
// "cloud-init/user-data".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

std::optional<std::string_view> Resource(std::string_view name);

// The resource, or ss::Error(70) when the build left it out.
std::string_view RequireResource(std::string_view name);

// The command line that runs shell/FILE in the sandbox: {interpreter, "-c", its text, FILE,
// args...}. The text is fixed; what varies travels as arguments ($1...), never inside it.
std::vector<std::string> ScriptArgv(std::string_view interpreter, std::string_view file,
                                    std::vector<std::string> args = {});

// Replaces every "{{key}}" with its value; an unknown "{{...}}" is left as it is.
std::string RenderTemplate(
    std::string_view text,
    const std::initializer_list<std::pair<std::string_view, std::string_view>>& vars);

}  // namespace ss
