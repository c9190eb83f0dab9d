// The spec's menus, drawn: the project menu of a bare `ss`, the first-run box and the Settings
// box of `ss config`. Pure text here (unit-tested); the tools read the answers, and only on a
// terminal.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ss {

inline constexpr size_t kMenuWidth = 59;  // the spec's boxes: 59 columns between the corners

struct MenuProject {
  std::string name;
  std::string last;  // "2h ago"
};

// The boxed project menu, ending with a newline; the prompt is ProjectMenuPrompt().
std::string ProjectMenu(const std::vector<MenuProject>& projects);
// "Select [1-3/n/s/q]: " ("Select [1/n/s/q]: " for one project).
std::string ProjectMenuPrompt(size_t count);

// The first-run box, open at the bottom: its top, "No projects yet. Create one:" and a blank
// line. FirstRunLine(text) is one more line of it; FirstRunBottom() closes it.
std::string FirstRunTop();
std::string FirstRunLine(const std::string& text);
std::string FirstRunBottom();

struct SettingsView {
  std::string cpus;    // "4"
  std::string memory;  // "8 GB"
  std::string disk;    // "100 GB (34 GB used)"
};

// The Settings box, ending with a newline; the prompt is kSettingsPrompt.
std::string SettingsMenu(const SettingsView& view);
inline constexpr const char* kSettingsPrompt = "Select [1-3/b]: ";

// What a menu answer means: a project number (1-based), a letter, or nothing valid.
struct MenuChoice {
  size_t number = 0;  // 1..count, or 0
  char letter = 0;    // lowercased letter, or 0
};
MenuChoice ParseMenuChoice(const std::string& answer, size_t count, const std::string& letters);

}  // namespace ss
