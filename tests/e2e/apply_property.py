#!/usr/bin/env python3
"""Random edits on both sides of a working copy, with ss sync, ss diff and ss apply in random
order: no edit is ever lost without an explicit choice (apply --ours or --theirs on a conflict
apply listed).

usage: apply_property.py HOST_DIR PROJECT ROUNDS SEED -- SSH_COMMAND...

HOST_DIR is the project on the host (its files are written with its owner), PROJECT its name,
SSH_COMMAND the command line that opens a shell in the sandbox (commands are piped to its bash).

Every edit writes a token of its own as the file's only line (or deletes the file). An edit is
superseded by a later edit of the same file made by a side that had it: its own side, or the
other side once a sync (user's edits) or an apply (agent's edits) brought it over. After every
round, every content edit neither superseded nor given up by an explicit --ours/--theirs must
still be a line of the file on the host or in the copy. Prints the rounds run, the ss commands
by outcome and the losses (0, or the test fails with the history of the file lost).
"""
import os
import random
import subprocess
import sys

FILES = ["f0", "f1", "f2", "f3", "d/f4", "d/f5"]


class Sandbox:
    def __init__(self, argv):
        self.proc = subprocess.Popen(argv + ["bash", "--noprofile", "--norc"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.n = 0

    def run(self, script):
        self.n += 1
        end = f"__ss_end_{self.n}__"
        self.proc.stdin.write(f"{script}\nprintf '\\n{end}%s\\n' $?\n")
        self.proc.stdin.flush()
        out = []
        for line in self.proc.stdout:
            if line.startswith(end):
                return "".join(out)
            out.append(line)
        raise SystemExit("the sandbox's shell went away")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


class Edit:
    def __init__(self, seq, side, path, token):
        self.seq, self.side, self.path, self.token = seq, side, path, token
        self.seen = False        # the other side had it (a sync or an apply brought it over)
        self.superseded = False
        self.given_up = False    # an explicit --ours/--theirs settled its file


def main():
    sep = sys.argv.index("--")
    host_dir, project, rounds, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    ssh = sys.argv[sep + 1:]
    rng = random.Random(seed)
    st = os.stat(host_dir)
    box = Sandbox(ssh)
    copy = f"/home/sandbox/projects/{project}"
    edits, history = [], []
    outcomes = {}
    seq = 0

    def read_copy():
        out = box.run(f"cd {copy} && for f in {' '.join(FILES)}; do printf '== %s\\n' \"$f\"; "
                      f"cat \"$f\" 2>/dev/null; done")
        files, cur = {}, None
        for line in out.splitlines():
            if line.startswith("== "):
                cur = line[3:]
                files[cur] = []
            elif cur is not None and line:
                files[cur].append(line)
        return files

    def read_host():
        files = {}
        for f in FILES:
            try:
                with open(os.path.join(host_dir, f)) as fh:
                    files[f] = fh.read().splitlines()
            except (FileNotFoundError, NotADirectoryError):
                files[f] = []
        return files

    def edit(side, path):
        nonlocal seq
        seq += 1
        delete = rng.random() < 0.2
        token = None if delete else f"{side}{seq}"
        # Earlier edits of the file this side had are superseded.
        for e in edits:
            if e.path == path and (e.side == side or e.seen):
                e.superseded = True
        if token:
            edits.append(Edit(seq, side, path, token))
        history.append(f"{seq} {side} {'deletes' if delete else 'writes ' + token} {path}")
        return token

    def ss(*args):
        r = subprocess.run(["ss", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        key = f"{args[0]}{' ' + args[2] if len(args) > 2 and args[2].startswith('--') and args[2] != '--yes' else ''} -> {r.returncode}"
        outcomes[key] = outcomes.get(key, 0) + 1
        history.append(f"ss {' '.join(args)} -> {r.returncode}")
        if r.returncode not in (0, 1):
            raise SystemExit(f"ss {' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        return r

    for rnd in range(rounds):
        for _ in range(rng.randint(0, 1)):
            path = rng.choice(FILES)
            token = edit("h", path)
            full = os.path.join(host_dir, path)
            if token is None:
                if os.path.exists(full):
                    os.unlink(full)
            else:
                os.makedirs(os.path.dirname(full), exist_ok=True)
                os.chown(os.path.dirname(full), st.st_uid, st.st_gid)
                with open(full, "w") as fh:
                    fh.write(token + "\n")
                os.chown(full, st.st_uid, st.st_gid)
        script = []
        for _ in range(rng.randint(0, 1)):
            path = rng.choice(FILES)
            token = edit("a", path)
            if token is None:
                script.append(f"rm -f {copy}/{path}")
            else:
                script.append(f"mkdir -p {os.path.dirname(copy + '/' + path)} && "
                              f"printf '%s\\n' {token} > {copy}/{path}")
        if script:
            box.run("; ".join(script))
        op = rng.random()
        if op < 0.35:
            r = ss("sync", project)
            if r.returncode == 0:
                on_copy = read_copy()
                for e in edits:
                    if e.side == "h" and e.token in on_copy.get(e.path, []):
                        e.seen = True
        elif op < 0.45:
            ss("diff", project)
        else:
            choice = rng.random()
            flag = []
            if choice < 0.15:
                flag = ["--ours"]
            elif choice < 0.3:
                flag = ["--theirs"]
            elif choice < 0.4:
                flag = ["--merge"]
            r = ss("apply", project, *flag, "--yes")
            if flag in (["--ours"], ["--theirs"]):
                settled = {line[4:].split("  (")[0] for line in r.stdout.splitlines()
                           if line.startswith("  C ")}
                for e in edits:
                    if e.path in settled:
                        e.given_up = True
            on_host = read_host()
            for e in edits:
                if e.side == "a" and e.token in on_host.get(e.path, []):
                    e.seen = True
        on_host, on_copy = read_host(), read_copy()
        for e in edits:
            if e.superseded or e.given_up:
                continue
            if e.token in on_host.get(e.path, []) or e.token in on_copy.get(e.path, []):
                continue
            print(f"round {rnd + 1}: edit {e.token} of {e.path} is lost", file=sys.stderr)
            print(f"host: {on_host.get(e.path)}  copy: {on_copy.get(e.path)}", file=sys.stderr)
            for h in history[-40:]:
                print("  " + h, file=sys.stderr)
            print(f"rounds: {rnd + 1}, losses: 1 (seed {seed})")
            sys.exit(1)
    box.close()
    print(f"rounds: {rounds}, edits: {seq}, losses: 0 (seed {seed})")
    for k in sorted(outcomes):
        print(f"  ss {k}: {outcomes[k]}")


if __name__ == "__main__":
    main()
