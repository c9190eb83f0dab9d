#include "error.hpp"
#include "resources.hpp"
#include "strings.hpp"

namespace ss {

std::string_view RequireResource(std::string_view name) {
  auto r = Resource(name);
  if (!r) throw Error(kExitSoftware, Cat("internal: resource '", name, "' is not built in"));
  return *r;
}

std::vector<std::string> ScriptArgv(std::string_view interpreter, std::string_view file,
                                    std::vector<std::string> args) {
  std::vector<std::string> argv = {std::string(interpreter), "-c",
                                   std::string(RequireResource(Cat("shell/", file))),
                                   std::string(file)};
  argv.insert(argv.end(), std::make_move_iterator(args.begin()),
              std::make_move_iterator(args.end()));
  return argv;
}

std::string RenderTemplate(
    std::string_view text,
    const std::initializer_list<std::pair<std::string_view, std::string_view>>& vars) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find("{{", i);
    if (open == std::string_view::npos) break;
    size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) break;
    std::string_view key = Trim(text.substr(open + 2, close - open - 2));
    out.append(text.substr(i, open - i));
    bool found = false;
    for (const auto& [k, v] : vars) {
      if (k == key) {
        out.append(v);
        found = true;
        break;
      }
    }
    if (!found) out.append(text.substr(open, close + 2 - open));
    i = close + 2;
  }
  out.append(text.substr(i));
  return out;
}

}  // namespace ss
