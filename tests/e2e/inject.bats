#!/usr/bin/env bats
# Credential injection, from inside a sandbox, against a stand-in internet
# (fake_internet_up: the HTTPS server for api.inject.test writes down the requests it gets; its
# certificate is from a test CA that ss-net is told to trust). The sandbox holds a placeholder
# only: the upstream gets the real value, which is nowhere in the sandbox: not in any process's
# environment, not in its files, not in the memory of the process that sent the request.
# The backend is SS_E2E_BACKEND (docker when unset); CTest runs it on every backend.

load helpers

setup_file() {
  export SS_E2E_BACKEND=${SS_E2E_BACKEND:-docker}
  e2e_sandbox_file inj
  FI_443=headers fake_internet_up api.inject.test
  echo "inj-secret-$$-$RANDOM$RANDOM" >"$BATS_FILE_TMPDIR/secret"
  printf 'secrets:\n  INJ_TEST_KEY: {inject: [api.inject.test]}\n' >"$SS_HOME/config.yaml"
  inj_env
  ss vm start --sandbox "$SANDBOX" --backend "$SS_E2E_BACKEND" >&3 2>&1
  ss net allow api.inject.test --sandbox "$SANDBOX" >/dev/null
}

# What ss-net is started with: the stand-in resolver, trust in the test CA, the secret.
inj_env() {
  fake_internet_env
  export SSL_CERT_FILE="$FI_DIR/ca.pem"
  INJ_TEST_KEY=$(cat "$BATS_FILE_TMPDIR/secret")
  export INJ_TEST_KEY
}

teardown_file() {
  e2e_env
  inj_env
  e2e_sandbox_remove
  fake_internet_down
}

setup() {
  e2e_sandbox_env
  inj_env
  W=$BATS_FILE_TMPDIR
  SECRET=$(cat "$W/secret")
}

as_root() { sandbox_ssh "$SANDBOX" sudo -n "$@"; }

@test "inject: the upstream gets the real value; the sandbox has only the placeholder" {
  # An agent stand-in: sends the request with the variable's value, prints the answer, and stays
  # (for the memory scan below, which takes minutes without hardware acceleration).
  ss exec e2e-scratch -- python3 -c '
import os, subprocess, time
key = os.environ["INJ_TEST_KEY"]
print(key, flush=True)
out = subprocess.run(["curl", "-sS", "-m", "10", "-H", "x-api-key: " + key,
                      "-H", "Authorization: Bearer " + key, "https://api.inject.test/v1/messages"],
                     capture_output=True, text=True)
print(out.stdout.strip(), out.stderr.strip(), flush=True)
open("/tmp/agent.pid", "w").write(str(os.getpid()))
time.sleep(900)' >"$W/agent.out" 2>&1 3>&- &
  agent=$!
  # Its two lines (the value it holds, then the answer), or its end; the first session of a
  # sandbox without hardware acceleration installs the CA first, which takes a while.
  for _ in $(seq 1500); do
    [ "$(wc -l <"$W/agent.out")" -ge 2 ] && break
    kill -0 "$agent" 2>/dev/null || break
    sleep 0.2
  done
  cat "$W/agent.out"
  placeholder=$(head -1 "$W/agent.out")
  [[ "$placeholder" == ss-placeholder-* ]]
  run sed -n 2p "$W/agent.out"
  assert_output --partial "ok 1"
  jq -e -s --arg s "$SECRET" 'length == 1
    and (.[0].headers | map(select(.[0] == "x-api-key")) == [["x-api-key", $s]])
    and (.[0].headers | map(select(.[0] == "Authorization")) == [["Authorization", "Bearer " + $s]])' \
    "$FI_DIR/requests"
  # Nowhere in the sandbox: environments, files, the stand-in's memory, read by root inside. The
  # secret goes in reversed (so neither this check's command line nor any log of it holds it).
  pid=$(as_root cat /tmp/agent.pid)
  run as_root python3 - "$pid" "$(echo "$SECRET" | rev)" "$placeholder" <<'EOF'
import os, re, sys
pid, placeholder = sys.argv[1], sys.argv[3].encode()
secret = sys.argv[2][::-1].encode()
environ = []
for p in os.listdir("/proc"):
    try:
        if p.isdigit() and p != str(os.getpid()) and secret in open(f"/proc/{p}/environ", "rb").read():
            environ.append(p)
    except OSError:
        pass
files = []
for top in ("/home", "/root", "/tmp", "/etc", "/var", "/usr/local", "/opt", "/run"):
    for d, _, names in os.walk(top):
        for n in names:
            path = os.path.join(d, n)
            try:
                if os.path.isfile(path) and not os.path.islink(path) \
                        and os.path.getsize(path) < 64 << 20 and secret in open(path, "rb").read():
                    files.append(path)
            except OSError:
                pass
found = {secret: 0, placeholder: 0}
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)
        if not m:
            continue
        start, end = int(m.group(1), 16), int(m.group(2), 16)
        try:
            mem.seek(start)
            data = mem.read(end - start)
        except (OSError, ValueError, OverflowError):
            continue
        for k in found:
            found[k] += data.count(k)
placeholder_env = placeholder in open(f"/proc/{pid}/environ", "rb").read()
print("environ", environ, "files", files, "memory", found[secret],
      "placeholder", placeholder_env and found[placeholder] > 0)
EOF
  assert_output "environ [] files [] memory 0 placeholder True"
  kill "$agent" 2>/dev/null || true
  # The CA the sandbox trusts is this install's; the secret is in no log on the host.
  run as_root cat /usr/local/share/ca-certificates/ss-net.crt
  assert_output "$(cat "$SS_HOME/.ss/net-ca.crt")"
  run grep -r -l -F "$SECRET" "$SS_HOME/.ss/sandboxes/$SANDBOX"
  assert_output ""
  run ss net log --json --sandbox "$SANDBOX"
  echo "$output" | jq -e -s 'map(select(.inject and .verdict == "allow" and .injected == ["INJ_TEST_KEY"]))
    | length == 1'
}

@test "inject: the placeholder is the same in every session, and refused in plain HTTP" {
  one=$(ss exec e2e-scratch -- printenv INJ_TEST_KEY)
  two=$(ss exec e2e-scratch -- printenv INJ_TEST_KEY)
  [[ "$one" == ss-placeholder-* ]]
  assert_equal "$one" "$two"
  run ss exec e2e-scratch -- printenv NODE_EXTRA_CA_CERTS
  assert_output /usr/local/share/ca-certificates/ss-net.crt
  run ss exec e2e-scratch -- sh -c "curl -s -m 10 --resolve api.inject.test:80:$FI_OUTSIDE -H \"x-api-key: \$INJ_TEST_KEY\" http://api.inject.test/"
  assert_output --partial "the placeholder of secret INJ_TEST_KEY is sent to api.inject.test in plain HTTP"
}
