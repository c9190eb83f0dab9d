// A sandbox's name, which names its folder on the host, its container or VM, its firewall chains
// and its bridge: checked before it is used for any of them.
#pragma once

#include <string>
#include <string_view>

namespace ss {

// Lowercase letters, digits and '-', starting with a letter, at most 63.
bool IsSandboxName(std::string_view name);
// Throws ss::Error(65) naming what a sandbox's name may be, when `name` is not one.
void ValidateSandboxName(const std::string& name);

}  // namespace ss
