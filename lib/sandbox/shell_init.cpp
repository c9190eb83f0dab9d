#include "shell_init.hpp"

#include "resources.hpp"
#include "shell_quote.hpp"

namespace ss {

const std::vector<std::string>& InitShells() {
  static const std::vector<std::string> shells = {"bash", "zsh", "fish"};
  return shells;
}

std::optional<std::string> ShellInitScript(std::string_view shell, const std::string& ss_path) {
  std::string_view text;
  if (shell == "bash" || shell == "zsh") {
    text = RequireResource("completions/init.sh");
  } else if (shell == "fish") {
    text = RequireResource("completions/init.fish");
  } else {
    return std::nullopt;
  }
  std::string quoted;
  if (shell == "fish") {  // fish: inside single quotes only \\ and \' are special
    quoted = "'";
    for (char c : ss_path) {
      if (c == '\\' || c == '\'') quoted += '\\';
      quoted += c;
    }
    quoted += "'";
  } else {
    quoted = ShellQuote(ss_path);
  }
  return RenderTemplate(text, {{"ss", quoted}, {"shell", shell}});
}

}  // namespace ss
