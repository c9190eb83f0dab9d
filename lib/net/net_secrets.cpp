#include "net_secrets.hpp"

#include <openssl/crypto.h>

#include <cstdlib>

#include "error.hpp"
#include "fs.hpp"
#include "process.hpp"
#include "strings.hpp"

namespace ss {
namespace {

void Wipe(std::string& s) {
  OPENSSL_cleanse(s.data(), s.size());
  s.clear();
}

std::optional<std::string> Trimmed(std::string raw, std::string* why, std::string_view what) {
  std::string value(Trim(raw));
  Wipe(raw);
  if (value.empty()) {
    *why = Cat(what, " is empty");
    return std::nullopt;
  }
  return value;
}

}  // namespace

SecretReader::~SecretReader() {
  for (auto& [argv, cached] : commands_) Wipe(cached.value);
}

std::optional<std::string> SecretReader::Read(const NetSecretSource& from, std::string* why) {
  switch (from.kind) {
    case NetSecretSource::kEnv: {
      const char* v = std::getenv(from.env.c_str());
      if (!v) {
        *why = Cat("$", from.env, " is not set on the host");
        return std::nullopt;
      }
      return Trimmed(v, why, Cat("$", from.env));
    }
    case NetSecretSource::kFile: {
      try {
        return Trimmed(ReadFile(from.file), why, Cat("the file ", from.file));
      } catch (const Error& e) {
        *why = e.what();
        return std::nullopt;
      }
    }
    case NetSecretSource::kCommand: {
      std::lock_guard<std::mutex> hold(mutex_);
      auto now = std::chrono::steady_clock::now();
      auto it = commands_.find(from.command);
      if (it != commands_.end()) {
        if (now - it->second.at < kCommandCache) return it->second.value;
        Wipe(it->second.value);
        commands_.erase(it);
      }
      std::string what = Cat("the command ", Quoted(from.command[0]));
      ProcessOptions o;
      o.capture_stderr = false;  // to ss-net's log file; a password manager may prompt there
      o.timeout = kCommandTimeout;
      o.unlisted = true;
      ProcessResult r;
      try {
        r = Run(from.command, o);
      } catch (const Error& e) {
        *why = e.what();
        return std::nullopt;
      }
      if (!r.ok()) {
        Wipe(r.out);
        *why = r.timed_out ? Cat(what, " did not finish within ", kCommandTimeout.count(), " s")
                           : Cat(what, " exited with status ", r.status);
        return std::nullopt;
      }
      auto value = Trimmed(std::move(r.out), why, Cat("the output of ", what));
      if (value) commands_[from.command] = {now, *value};
      return value;
    }
  }
  *why = "no source";
  return std::nullopt;
}

}  // namespace ss
