#include "deploy.hpp"

#include "shares.hpp"

namespace ss {

std::string ResolveDeployDir(const std::string& dir, const std::string& origin) {
  return ResolveHostFolder(dir, "deploy folder", origin, true);
}

}  // namespace ss
