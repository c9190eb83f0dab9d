// Keeping a QEMU machine: one supervisor process per running VM, started by whichever ss command
// boots it and living as long as the VM does. QEMU and virtiofsd are its direct children: it
// waits for them (no zombies), records why QEMU stopped, stops virtiofsd with it and removes the
// run files. The children die with it (parent-death signal), so killing the supervisor, even
// with SIGKILL, leaves nothing running. The supervisor holds the machine's lock for its whole
// life: "the lock is free" means "nothing runs", and the next ss command cleans up whatever a
// vanished supervisor left.
//
// A machine's directory (StateDir()/qemu/<name>/):
//   machine.json    what to boot: image files, resources, shares, the preferred SSH port
//   disk.qcow2      the overlay on the image's base; seed.iso the NoCloud seed (0600)
//   lock            held by the supervisor while the VM runs
//   run.json        the running VM: pids (with start times), SSH port, shares, acceleration
//   last-exit.json  how QEMU last ended
//   console.log, qemu.log, virtiofsd.log, supervisor.log
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "json_out.hpp"

namespace ss {

struct QemuPaths {
  explicit QemuPaths(std::string dir);
  std::string dir;
  std::string config, disk, seed, lock, run, last_exit;
  std::string console_log, qemu_log, virtiofsd_log, supervisor_log;
  std::string socket_dir;  // the machine's directory, or a shorter one when sun_path needs it
  std::string Qmp() const;
  std::string VfsSocket(const std::string& tag) const;
};

// A process named by pid and start time, so that a recycled pid is never taken for it.
struct ProcessId {
  pid_t pid = 0;
  uint64_t start = 0;
  bool Alive() const;  // running (not a zombie) and still the same process
};
ProcessId IdentifyProcess(pid_t pid);
// A process as run.json records it ({"pid", "start"}); pid 0 when the record has none.
ProcessId ProcessFromJson(const Json& j);

// The running VM as its supervisor recorded it; nullopt when there is no run.json.
std::optional<Json> ReadRunFile(const QemuPaths& paths);

// Starts the supervisor of the machine and waits until QEMU runs and its monitor answers.
// `lock_fd` is the machine's lock, held (flock) by the caller; the supervisor keeps it for the
// VM's life. `supervisor` is the ss-vm binary. Returns the SSH port. Throws ss::Error(69) with
// QEMU's own words when the VM does not start; nothing is left running then.
int LaunchSupervisor(const QemuPaths& paths, int lock_fd, const std::string& supervisor,
                     std::chrono::seconds timeout);

// The supervisor itself: ss-vm's hidden `--qemu-supervise DIR`, with the readiness pipe on
// descriptor 3 and the machine's lock on descriptor 4. Returns at once in the process that was
// started (the supervisor proper continues in a child).
int RunQemuSupervisor(const std::string& dir);

// Kills what a supervisor that vanished left behind (QEMU, virtiofsd), removes the run files and
// records that the VM did not stop cleanly. Call with the machine's lock held.
void CleanUpStale(const QemuPaths& paths);

}  // namespace ss
