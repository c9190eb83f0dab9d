// Exit statuses shared by every ss binary (the sysexits(3) family).
//
//   0   ok
//   1   a check reported failures (health-check, doctor) or a partial failure the output explains
//   64  usage: bad command line (unknown verb, flag or key, missing argument, no TTY to ask on)
//   65  data: bad input data (invalid project name, malformed value or spec)
//   66  no input: the named thing does not exist (project, sandbox, snapshot, file)
//   69  unavailable: a service or tool ss needs is missing or not running (daemon, backend)
//   70  software: a bug in ss
//   73  can't create: the thing to create already exists or cannot be made
//   74  I/O error while reading or writing a file ss owns
//   75  temporary failure: try again (lock held, sandbox busy, timed out)
//   77  permission denied (host key mismatch, unsafe socket or file modes)
//   78  configuration: config.yaml is invalid
//   130 interrupted (SIGINT)
//   255 verbs that run a user command pass its status through and use 255 for their own
//       failures, as ssh(1) does
#pragma once

namespace ss {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,
  kExitUsage = 64,
  kExitDataErr = 65,
  kExitNoInput = 66,
  kExitUnavailable = 69,
  kExitSoftware = 70,
  kExitCantCreate = 73,
  kExitIoErr = 74,
  kExitTempFail = 75,
  kExitNoPerm = 77,
  kExitConfig = 78,
  kExitInterrupted = 130,
  kExitRemote = 255,
};

}  // namespace ss
