// The real values of secrets (net_policy.hpp NetSecretSource), read on the host when a session
// starts (ss-attach) or a request needs one (ss-net): from the process's environment, a file, or
// a command's output (run without a shell, its output kept for a minute so a password manager is
// not asked on every request).
// Values are never logged, and no message says more than where a value was to come from.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "net_policy.hpp"

namespace ss {

class SecretReader {
 public:
  static constexpr std::chrono::seconds kCommandCache{60};
  static constexpr std::chrono::seconds kCommandTimeout{30};

  ~SecretReader();

  // The value, surrounding white space removed; nothing with `why` set (naming the source, never
  // a value) when it cannot be read or is empty. Thread-safe.
  std::optional<std::string> Read(const NetSecretSource& from, std::string* why);

 private:
  struct Cached {
    std::chrono::steady_clock::time_point at;
    std::string value;
  };
  std::mutex mutex_;
  std::map<std::vector<std::string>, Cached> commands_;
};

}  // namespace ss
