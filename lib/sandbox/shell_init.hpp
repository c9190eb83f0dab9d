// `ss init SHELL`: the code a user's shell evaluates to get helpers that need the calling shell
// (`ss cd PROJECT` changes that shell's directory). The `ss` function it defines hands every
// other call to the `ss` command unchanged, so iproute2's `ss -tlnp` still reaches iproute2.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

// The shells `ss init` knows, in the order help and completion list them.
const std::vector<std::string>& InitShells();

// The integration for `shell` ("bash", "zsh", "fish"), calling the ss binary at `ss_path` for
// `ss cd`; nullopt for a shell it does not know.
std::optional<std::string> ShellInitScript(std::string_view shell, const std::string& ss_path);

}  // namespace ss
