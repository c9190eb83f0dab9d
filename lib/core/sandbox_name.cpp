#include "sandbox_name.hpp"

#include "error.hpp"
#include "strings.hpp"

namespace ss {

bool IsSandboxName(std::string_view name) { return NameOf(name, "a-z", "a-z0-9-", 63); }

void ValidateSandboxName(const std::string& name) {
  if (!IsSandboxName(name)) {
    throw Error(kExitDataErr,
                Cat("invalid sandbox name '", name,
                    "': use lowercase letters, numbers and hyphens, starting with a letter"));
  }
}

}  // namespace ss
