// ss-backend-test: drives a backend's snapshot hooks from the end-to-end tests (not installed,
// not for users; the snapshot commands users run are built on the same hooks).
//
//   ss-backend-test BACKEND take|restore|delete NAME SNAPSHOT
//   ss-backend-test BACKEND list NAME        one snapshot name per line, oldest first
//
// Errors print as ss's do, with the exit code of the ss::Error.
#include <iostream>

#include "backend.hpp"
#include "backend_factory.hpp"
#include "config.hpp"
#include "error.hpp"

int main(int argc, char** argv) {
  using namespace ss;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() < 3 || (args[1] != "list" && args.size() != 4)) {
      std::cerr << "usage: ss-backend-test BACKEND take|restore|delete|list NAME [SNAPSHOT]\n";
      return 64;
    }
    auto backend = MakeBackend(args[0], Config::Load());
    const std::string& verb = args[1];
    const std::string& name = args[2];
    if (verb == "take") {
      backend->TakeSnapshot(name, args[3]);
    } else if (verb == "restore") {
      backend->RestoreSnapshot(name, args[3]);
    } else if (verb == "delete") {
      backend->DeleteSnapshot(name, args[3]);
    } else if (verb == "list") {
      for (const auto& s : backend->Snapshots(name)) std::cout << s.name << "\n";
    } else {
      std::cerr << "ss-backend-test: unknown verb '" << verb << "'\n";
      return 64;
    }
    return 0;
  } catch (const Error& e) {
    std::cerr << "ss-backend-test: error: " << e.what() << "\n";
    return e.code();
  }
}
