#include "project_line.hpp"

#include "error.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace ss {

const CommandTable& ProjectCommands() {
  static const CommandTable table({
      .prefix = "ss project ",
      .help_command = "ss project",
      .usage = "usage: ss new NAME [--from PATH] [--github [--private]] [--copy]\n"
               "       ss list [--json] [--no-size]\n"
               "       ss delete NAME [--yes] [--force]\n"
               "       ss project show NAME [--json]\n"
               "       ss project path [NAME]\n"
               "       ss project guard --sandbox NAME [--projects DIR] [--folder DIR]...",
      .about = "Create, list, show and delete projects: the folders in ~/super-sandbox/projects\n"
               "($SS_HOME/projects) that every sandbox sees at /home/sandbox/projects. A NAME has "
               "2 to 50\nlowercase letters, digits and hyphens, starts with a letter and has no "
               "'--'.\nss project [new|list|show|delete] ... is the same as the short forms. ss "
               "project path prints\nthe folder of NAME (of all projects without NAME); `ss cd "
               "NAME` uses it (see ss init).",
      .commands = {{.name = "new",
                    .args = "NAME [--from PATH] [--github [--private]] [--copy]",
                    .min_args = 1,
                    .max_args = 1,
                    .help = "create a project: the scaffold, or a copy of --from",
                    .spelled = "ss new"},
                   {.name = "list",
                    .args = "[--json] [--no-size]",
                    .help = "the projects, most recently used first",
                    .spelled = "ss list"},
                   {.name = "show",
                    .args = "NAME [--json]",
                    .min_args = 1,
                    .max_args = 1,
                    .help = "one project: its folders, dates, size and GitHub repository"},
                   {.name = "delete",
                    .args = "NAME [--yes] [--force]",
                    .min_args = 1,
                    .max_args = 1,
                    .help = "delete a project and its folder (asks first)",
                    .spelled = "ss delete"},
                   {.name = "path",
                    .args = "[NAME]",
                    .max_args = 1,
                    .help = "the folder of NAME, or of all projects"},
                   {.name = "guard",
                    .args = "--sandbox NAME [--projects DIR] [--folder DIR]...",
                    .help = "watch the folders a running sandbox shares and set aside the "
                            "repositories it makes there (sandboxes start it; see ss-project(1))",
                    .summary = "watch a sandbox's shared folders for repositories"}},
      .options =
          {{.name = "from",
            .kind = OptionSpec::kText,
            .value = "PATH",
            .help = "new: copy this folder or git clone (history and all) instead of the scaffold",
            .commands = {"new"}},
           {.name = "github",
            .help = "new: also create a GitHub repository with gh (public unless --private)",
            .commands = {"new"}},
           {.name = "private",
            .help = "new: make that GitHub repository private",
            .commands = {"new"}},
           {.name = "copy",
            .help = "new: the agent works in a copy on the sandbox's disk (projects.NAME.mode: "
                    "copy; see ss-sync(1))",
            .commands = {"new"}},
           {.name = "json",
            .help = "list, show: print one JSON document (see ss-json(7))",
            .commands = {"list", "show"}},
           {.name = "no-size", .help = "list: leave out the sizes (faster)", .commands = {"list"}},
           {.name = "yes",
            .letter = 'y',
            .help = "delete: do not ask (required when standard input is not a terminal)",
            .commands = {"delete"}},
           {.name = "sandbox",
            .kind = OptionSpec::kText,
            .value = "NAME",
            .help = "guard: the sandbox whose folders these are",
            .commands = {"guard"}},
           {.name = "projects",
            .kind = OptionSpec::kText,
            .value = "DIR",
            .help = "guard: the projects folder, whose projects' .git files are ss's",
            .commands = {"guard"}},
           {.name = "folder",
            .kind = OptionSpec::kTexts,
            .value = "DIR",
            .help = "guard: another folder the sandbox shares read-write (repeatable)",
            .commands = {"guard"}},
           {.name = "force",
            .help = "delete: also when its working copy has changes not yet applied (saved to "
                    "~/super-sandbox/rescued/ first)",
            .commands = {"delete"}}},
  });
  return table;
}

ProjectLine ParseProjectLine(const std::vector<std::string>& args) {
  ParsedLine line = ProjectCommands().Parse(args);
  ProjectLine o;
  using C = ProjectLine::Command;
  if (line.help) {
    o.command = C::kHelp;
    return o;
  }
  std::string command = line.command ? line.command->name : "list";
  o.command = command == "new"      ? C::kNew
              : command == "show"   ? C::kShow
              : command == "delete" ? C::kDelete
              : command == "path"   ? C::kPath
              : command == "guard"  ? C::kGuard
                                    : C::kList;
  if (!line.args.empty()) o.name = line.args[0];
  o.from = line.Text("from");
  o.github = line.Flag("github");
  o.is_private = line.Flag("private");
  o.copy = line.Flag("copy");
  o.json = line.Flag("json");
  o.no_size = line.Flag("no-size");
  o.yes = line.Flag("yes");
  o.force = line.Flag("force");
  o.sandbox = line.Text("sandbox");
  o.projects_dir = line.Text("projects");
  o.folders = line.Texts("folder");
  std::string spelled = line.command ? ProjectCommands().Spelled(*line.command) : "ss list";
  if (line.Given("from") && o.from.empty()) throw UsageError("--from needs a PATH", spelled);
  if (o.is_private && !o.github) throw UsageError("--private needs --github", spelled);
  if (o.command == C::kGuard &&
      (o.sandbox.empty() || (o.projects_dir.empty() && o.folders.empty()))) {
    throw UsageError("guard needs --sandbox NAME and a folder to watch (--projects, --folder)",
                     spelled);
  }
  return o;
}

}  // namespace ss
