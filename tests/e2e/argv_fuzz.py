#!/usr/bin/env python3
"""Random argv lists through a command, compared byte for byte with what the other end got.

    argv_fuzz.py COUNT SEED PREFIX... :: EXPECT_PREFIX...

Runs PREFIX + argv for COUNT random argv lists (quotes, spaces, $, backticks, backslashes,
globs, newlines, tabs, unicode, invalid UTF-8, empty strings, leading dashes; never NUL, which
no argv can hold). The command must print the arguments it received, each followed by a NUL.
The expected output is EXPECT_PREFIX + argv. Exits 1 at the first difference, printing it.
"""
import random
import subprocess
import sys

ALPHABET = [b"'", b'"', b"$", b"`", b"\\", b"*", b"?", b"[", b"]", b"{", b"}", b"~", b" ",
            b"\t", b"\n", b";", b"|", b"&", b"<", b">", b"(", b")", b"#", b"!", b"%", b"=",
            b"-", b"--", b"a", b"Z", b"0", "é".encode(), "日本".encode(), "🙂".encode(),
            b"\xff", b"\xfe", b"\xc3", b"\x80", b"\x01", b"\x7f", b"$HOME", b"$(id)", b"-n",
            b"-e", b"%s", b"\r"]


def word(rng):
    kind = rng.random()
    if kind < 0.05:
        return b""
    if kind < 0.10:
        return bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 12)))
    return b"".join(rng.choice(ALPHABET) for _ in range(rng.randrange(1, 8)))


def main():
    count, seed = int(sys.argv[1]), int(sys.argv[2])
    split = sys.argv.index("::")
    prefix = [a.encode() for a in sys.argv[3:split]]
    expect_prefix = [a.encode() for a in sys.argv[split + 1:]]
    rng = random.Random(seed)
    for i in range(count):
        argv = [word(rng) for _ in range(rng.randrange(1, 7))]
        if rng.random() < 0.3:
            argv[0] = b"-" + argv[0]
        out = subprocess.run(prefix + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        got = out.stdout.split(b"\0")[:-1]
        want = expect_prefix + argv
        if out.returncode != 0 or got != want:
            print(f"case {i}: status {out.returncode}\n want {want!r}\n got  {got!r}\n"
                  f" stderr {out.stderr!r}")
            return 1
    print(f"{count} argv lists exact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
