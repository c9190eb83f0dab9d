// Files of the source tree compiled into the binaries (see lib/cmake/embed.cmake): the project
// scaffold templates, cloud-init templates and the sandbox shell config. Names are paths
// relative to the repository root: "lib/templates/AGENTS.md", "cloud-init/user-data".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ss {

std::optional<std::string_view> Resource(std::string_view name);

// The resource, or ss::Error(70) when the build left it out.
std::string_view RequireResource(std::string_view name);

// Replaces every "{{key}}" with its value; an unknown "{{...}}" is left as it is.
std::string RenderTemplate(
    std::string_view text,
    const std::initializer_list<std::pair<std::string_view, std::string_view>>& vars);

}  // namespace ss
