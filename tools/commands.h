// The subcommands of the `mlaops` command: one file per command (cmd_<name>.cpp), each taking
// the arguments after its name and returning the process exit status (0 ok, 1 a check or run
// failed, 2 bad arguments).
#pragma once

namespace mlaops::tools {

int cmd_info(int argc, char** argv);
int cmd_demo(int argc, char** argv);
int cmd_check(int argc, char** argv);
int cmd_bench(int argc, char** argv);

struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* summary;
};

// The command table (data): what `mlaops --help` lists and main() dispatches on.
const Command* command_table();

}  // namespace mlaops::tools
