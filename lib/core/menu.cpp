#include "menu.hpp"

#include "box.hpp"
#include "strings.hpp"

namespace ss {
namespace {

std::string Pad(const std::string& s, size_t width) {
  size_t w = DisplayWidth(s);
  return w >= width ? s + " " : s + std::string(width - w, ' ');
}

// The first line of a box of kMenuWidth columns is its top; the last its bottom.
std::vector<std::string> BoxLines(const std::vector<std::string>& lines) {
  return SplitLines(Box(lines, kMenuWidth));
}

}  // namespace

std::string ProjectMenu(const std::vector<MenuProject>& projects) {
  std::vector<std::string> lines = {"Super-Sandbox", "", "Projects:"};
  for (size_t i = 0; i < projects.size(); ++i) {
    lines.push_back(
        Cat("  ", Pad(Cat(i + 1, ". ", projects[i].name), 34), "(last: ", projects[i].last, ")"));
  }
  lines.insert(lines.end(),
               {"", std::string(kBoxRule), "", "[n] New project", "[s] Settings", "[q] Quit", ""});
  return Box(lines, kMenuWidth);
}

std::string ProjectMenuPrompt(size_t count) {
  return count == 1 ? "Select [1/n/s/q]: " : Cat("Select [1-", count, "/n/s/q]: ");
}

std::string FirstRunTop() {
  auto lines = BoxLines({"Super-Sandbox", "", "No projects yet. Create one:", ""});
  lines.pop_back();  // the bottom comes later
  return Join(lines, "\n") + "\n";
}

std::string FirstRunLine(const std::string& text) { return BoxLines({text})[1] + "\n"; }

std::string FirstRunBottom() {
  auto lines = BoxLines({""});
  return lines[1] + "\n" + lines[2] + "\n";
}

std::string SettingsMenu(const SettingsView& v) {
  return Box({"Settings", "", "VM Resources:", Cat("  CPUs:      ", v.cpus),
              Cat("  Memory:    ", v.memory), Cat("  Disk:      ", v.disk), "",
              std::string(kBoxRule), "", "[1] Adjust VM resources", "[2] Reset VM (keeps projects)",
              "[3] Factory reset (deletes everything)", "[b] Back", ""},
             kMenuWidth);
}

MenuChoice ParseMenuChoice(const std::string& answer, size_t count, const std::string& letters) {
  MenuChoice c;
  std::string a = ToLower(Trim(answer));
  if (a.size() == 1 && letters.find(a[0]) != std::string::npos) {
    c.letter = a[0];
    return c;
  }
  if (a.empty() || a.size() > 6 || a.find_first_not_of("0123456789") != std::string::npos) return c;
  size_t n = std::stoul(a);
  if (n >= 1 && n <= count) c.number = n;
  return c;
}

}  // namespace ss
