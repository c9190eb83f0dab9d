# The far end of ss's remote unix-socket forwards (see lib/ssh/remote_socket.cpp for the design
# and the frame protocol). ss runs it over SSH, sending this text on stdin ahead of the frames:
#
#   python3 -I -S -c "$(cat socket-bridge-boot.py)" serve [--mkdir] PATH
#
# It listens on PATH (mode 0600; with --mkdir its directory is created 0700 and must be ours) and
# tells ss, over its stdout, of every connection made there. ss then opens an SSH channel of its
# own for it (direct-streamlocal) to this helper's rendezvous socket, in a directory only this
# user can enter, and sends the connection's id and secret token first; the helper pairs the two
# and copies bytes between them, one thread per direction, blocking: no frames, no event loop and
# no acknowledgements on the data path, whose flow control is the SSH channel's own window.
#
# Helpers of several SSH connections forwarding the same PATH share one listener: the one holding
# the lock on PATH.lock listens (on PATH, and on PATH.ctl for the others), and hands each
# accepted connection over (SCM_RIGHTS) to the helper of the SSH connection the client process
# belongs to, else to the newest one. When its own SSH connection ends, the listening helper
# keeps listening for the others and leaves when the last one has gone, removing PATH.
#
# The helpers talk over PATH.ctl in SEQPACKET messages, and only helpers of one protocol share a
# listener (another ss build may run another helper):
#   follower -> leader  "H PROTOCOL SESSION"  joins (SESSION: its sshd's pid, 0 when unknown)
#   leader -> follower  "H PROTOCOL"          the leader's protocol; closed when it differs
#   leader -> follower  "F" + a descriptor    a connection made on PATH, for the follower
# A follower that has not joined with the leader's protocol is never handed a connection.
import fcntl
import hmac
import os
import resource
import selectors
import shutil
import signal
import socket
import stat
import struct
import sys
import tempfile
import threading
import time

PROTOCOL = 2  # of the messages on PATH.ctl above: change it whenever they change
HDR = struct.Struct(">BII")  # the frames on stdin and stdout: type, connection id, length
OPEN, CLOSE, READY, ERROR = b"OCRE"
TOKEN = 16  # bytes of a connection's secret
PAIR = struct.Struct(">I%ds" % TOKEN)  # what ss sends first on a connection's channel
CHUNK = 64 * 1024
R, W = selectors.EVENT_READ, selectors.EVENT_WRITE


def session_of(pid):
    """The per-connection sshd process above pid: the SSH connection it belongs to."""
    for _ in range(200):
        if pid <= 1:
            return None
        try:
            with open("/proc/%d/stat" % pid, "rb") as f:
                st = f.read()
        except OSError:
            return None
        end = st.rindex(b")")
        if st[st.index(b"(") + 1 : end] in (b"sshd", b"sshd-session"):
            return pid
        pid = int(st[end + 2 :].split()[1])
    return None


class Fatal(Exception):
    pass


def copy(src, dst):
    """Copies src to dst until src ends; False when either failed. Through a pipe with splice,
    the bytes never enter this process, when there is a descriptor to spare for it."""
    try:
        pipe = os.pipe() if hasattr(os, "splice") else None
    except OSError:
        pipe = None
    try:
        if pipe is None:
            while True:
                data = src.recv(CHUNK)
                if not data:
                    break
                dst.sendall(data)
        else:
            rd, wr, s, d = pipe[0], pipe[1], src.fileno(), dst.fileno()
            while True:
                n = os.splice(s, wr, CHUNK)
                if n == 0:
                    break
                while n:
                    n -= os.splice(rd, d, n)
        dst.shutdown(socket.SHUT_WR)
        return True
    except OSError:
        return False
    finally:
        if pipe is not None:
            os.close(pipe[0])
            os.close(pipe[1])


def carry(client, channel):
    """Copies a client's connection and the SSH channel ss opened for it both ways, a thread per
    direction, and closes both when both have ended."""

    def direction(src, dst):
        if not copy(src, dst):
            for s in (client, channel):
                try:
                    s.shutdown(socket.SHUT_RDWR)  # wakes the other direction
                except OSError:
                    pass

    up = threading.Thread(target=direction, args=(client, channel), daemon=True)
    up.start()
    direction(channel, client)
    up.join()
    client.close()
    channel.close()


def sweep_rendezvous():
    """Removes the rendezvous directories of helpers that were killed (SIGKILL leaves them):
    ours, a minute old, and nobody listening in them."""
    base = tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(base) if n.startswith("ss-bridge-")]
    except OSError:
        return
    for name in names:
        d = os.path.join(base, name)
        try:
            st = os.lstat(d)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            if time.time() - st.st_mtime < 60:
                continue
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(os.path.join(d, "s"))
                continue  # a live helper's
            except (ConnectionRefusedError, FileNotFoundError):
                pass
            finally:
                probe.close()
            shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass


class Follower:
    __slots__ = ("sock", "session", "since", "joined")

    def __init__(self, sock, session, since):
        self.sock = sock
        self.session = session
        self.since = since
        self.joined = False


class Bridge:
    def __init__(self, path, mkdir):
        self.path = path
        self.mkdir = mkdir
        self.sel = selectors.DefaultSelector()
        self.pending = {}  # connection id -> (client socket, token): waiting for ss's channel
        self.lock = threading.Lock()  # guards pending against the pairing threads
        self.next_id = 1
        self.out = bytearray()
        self.out_registered = False
        self.inbuf = bytearray()
        self.up_alive = True
        self.session = session_of(os.getpid())
        self.since = time.monotonic()
        self.lock_fd = -1
        self.listener = None
        self.ctl = None  # leader: the control listener
        self.followers = {}  # leader: control socket fd -> Follower
        self.leader = None  # follower: the control connection to the leader
        self.retry_at = None
        self.inodes = {}
        self.rdv_dir = None
        self.rdv = None  # the rendezvous listener ss's channels connect to

    # ---- upstream (stdin/stdout to ss) ----

    def frame(self, kind, cid, payload=b""):
        self.out += HDR.pack(kind, cid, len(payload))
        self.out += payload

    def flush(self):
        while self.out and self.up_alive:
            try:
                n = os.write(1, self.out)
            except BlockingIOError:
                break
            except OSError:
                self.upstream_gone()
                return
            del self.out[:n]
        want = bool(self.out) and self.up_alive
        if want != self.out_registered:
            if want:
                self.sel.register(1, W, "out")
            else:
                self.sel.unregister(1)
            self.out_registered = want

    def read_upstream(self):
        try:
            data = os.read(0, CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.upstream_gone()
            return
        buf = self.inbuf
        buf += data
        pos = 0
        while len(buf) - pos >= HDR.size:
            kind, cid, length = HDR.unpack_from(buf, pos)
            if len(buf) - pos - HDR.size < length:
                break
            pos += HDR.size + length
            if kind == CLOSE:  # ss could not reach a target for it
                with self.lock:
                    entry = self.pending.pop(cid, None)
                if entry is not None:
                    entry[0].close()
        del buf[:pos]

    def upstream_gone(self):
        if not self.up_alive:
            return
        self.up_alive = False
        with self.lock:
            entries = list(self.pending.values())
            self.pending.clear()
        for sock, _ in entries:
            sock.close()
        self.sel.unregister(0)
        if self.out_registered:
            self.sel.unregister(1)
            self.out_registered = False
        self.out = bytearray()
        self.close_rendezvous()

    # ---- clients (connections made on PATH) and their channels ----

    def listen_rendezvous(self):
        sweep_rendezvous()
        self.rdv_dir = tempfile.mkdtemp(prefix="ss-bridge-")  # mode 0700, a fresh name
        path = os.path.join(self.rdv_dir, "s")
        self.rdv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.rdv.bind(path)
        self.rdv.listen(512)
        self.rdv.setblocking(False)
        self.sel.register(self.rdv, R, "rendezvous")
        return path

    def close_rendezvous(self):
        if self.rdv is not None:
            self.sel.unregister(self.rdv)
            self.rdv.close()
            self.rdv = None
        if self.rdv_dir is not None:
            shutil.rmtree(self.rdv_dir, ignore_errors=True)
            self.rdv_dir = None

    def adopt(self, sock):
        if not self.up_alive:
            sock.close()
            return
        token = os.urandom(TOKEN)
        with self.lock:
            cid = self.next_id
            self.next_id += 1
            self.pending[cid] = (sock, token)
        self.frame(OPEN, cid, token)

    def accept_channels(self):
        for _ in range(64):
            try:
                sock, _ = self.rdv.accept()
            except OSError:
                return
            threading.Thread(target=self.pair, args=(sock,), daemon=True).start()

    def pair(self, channel):
        """A channel from ss: its first bytes name the connection it carries; then copy."""
        head = b""
        try:
            channel.settimeout(10)  # (a timeout makes the socket non-blocking: no MSG_WAITALL)
            while len(head) < PAIR.size:
                more = channel.recv(PAIR.size - len(head))
                if not more:
                    break
                head += more
            channel.settimeout(None)
        except OSError:
            pass
        if len(head) != PAIR.size:
            channel.close()
            return
        cid, token = PAIR.unpack(head)
        with self.lock:
            entry = self.pending.get(cid)
            if entry is None or not hmac.compare_digest(entry[1], token):
                entry = None
            else:
                del self.pending[cid]
        if entry is None:
            channel.close()
            return
        client = entry[0]
        client.setblocking(True)
        carry(client, channel)

    # ---- sharing PATH between helpers ----

    def prepare_dir(self):
        d = os.path.dirname(self.path) or "."
        if self.mkdir:
            try:
                os.mkdir(d, 0o700)
            except FileExistsError:
                pass
            except OSError as e:
                raise Fatal("cannot create %s: %s" % (d, e.strerror))
            st = os.lstat(d)
            if not stat.S_ISDIR(st.st_mode):
                raise Fatal("%s is not a directory" % d)
            if st.st_uid != os.getuid():
                raise Fatal("%s is not owned by uid %d (owner: uid %d)" % (d, os.getuid(), st.st_uid))
            if stat.S_IMODE(st.st_mode) != 0o700:
                os.chmod(d, 0o700)

    def open_lock(self):
        try:
            self.lock_fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise Fatal("cannot bind to path %s: %s" % (self.path, e.strerror))

    def try_lock(self):
        while True:
            try:
                fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            try:
                same = os.stat(self.path + ".lock").st_ino == os.fstat(self.lock_fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return True
            # The last holder removed the file on its way out: lock the new one.
            os.close(self.lock_fd)
            self.open_lock()

    def bind(self, path, kind, check_live):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        if st is not None:
            if not stat.S_ISSOCK(st.st_mode):
                raise Fatal("cannot bind to path %s: it exists and is not a socket" % path)
            if check_live:
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                probe.setblocking(False)
                try:
                    probe.connect(path)
                    live = True
                except (ConnectionRefusedError, FileNotFoundError):
                    live = False
                except BlockingIOError:
                    live = True
                finally:
                    probe.close()
                if live:
                    raise Fatal("cannot bind to path %s: Address already in use" % path)
            try:
                os.unlink(path)  # stale: nobody listens there any more
            except FileNotFoundError:
                pass
        sock = socket.socket(socket.AF_UNIX, kind)
        old = os.umask(0o177)
        try:
            sock.bind(path)
        except OSError as e:
            sock.close()
            raise Fatal("cannot bind to path %s: %s" % (path, e.strerror))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        self.inodes[path] = os.lstat(path).st_ino
        sock.listen(512)
        sock.setblocking(False)
        return sock

    def become_leader(self):
        self.listener = self.bind(self.path, socket.SOCK_STREAM, True)
        self.ctl = self.bind(self.path + ".ctl", socket.SOCK_SEQPACKET, False)
        self.sel.register(self.listener, R, "accept")
        self.sel.register(self.ctl, R, "ctl-accept")

    def join_leader(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(self.path + ".ctl")
            s.send(b"H %d %d" % (PROTOCOL, self.session or 0))
            s.settimeout(2)
            answer = s.recv(64)
        except socket.timeout:
            s.close()
            raise Fatal(
                "cannot share the listener of %s: it belongs to a helper of an older ss build, "
                "which does not say its protocol (this one: %d); end that build's sessions of "
                "this sandbox and try again" % (self.path, PROTOCOL)
            )
        except OSError:
            s.close()
            return False
        if not answer:
            s.close()
            return False  # the leader left meanwhile
        if answer != b"H %d" % PROTOCOL:
            s.close()
            raise Fatal(
                "cannot share the listener of %s: it belongs to a helper of another ss build "
                "(protocol %s, this one: %d); end that build's sessions of this sandbox and try "
                "again" % (self.path, answer[2:].decode("ascii", "replace"), PROTOCOL)
            )
        s.setblocking(False)
        self.leader = s
        self.sel.register(s, R, "leader")
        return True

    def attach(self, deadline):
        while True:
            if self.try_lock():
                self.become_leader()
                return "leader"
            if self.join_leader():
                return "follower"
            if time.monotonic() > deadline:
                raise Fatal("cannot reach the listener of %s" % self.path)
            time.sleep(0.02)

    def accept_clients(self):
        for _ in range(64):
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            self.route(sock)

    def route(self, sock):
        session = None
        try:
            pid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
            session = session_of(pid)
        except OSError:
            pass
        while True:
            choices = [f for f in self.followers.values() if f.joined]
            if self.up_alive:
                choices.append(self)
            if not choices:
                sock.close()
                return
            match = [u for u in choices if session is not None and u.session == session]
            pick = match[0] if match else max(choices, key=lambda u: u.since)
            if pick is self:
                self.adopt(sock)
                return
            try:
                socket.send_fds(pick.sock, [b"F"], [sock.fileno()])
                sock.close()
                return
            except OSError:
                self.forget(pick.sock)

    def accept_follower(self):
        try:
            s, _ = self.ctl.accept()
        except OSError:
            return
        s.setblocking(False)
        self.sel.register(s, R, "follower")
        self.followers[s.fileno()] = Follower(s, None, time.monotonic())

    def read_follower(self, s):
        try:
            msg = s.recv(64)
        except BlockingIOError:
            return
        except OSError:
            msg = b""
        if not msg:
            self.forget(s)
            return
        f = self.followers.get(s.fileno())
        if f is None or f.joined:
            return
        words = msg.split()
        if len(words) != 3 or words[0] != b"H" or not all(w.isdigit() for w in words[1:]):
            return  # a helper from before protocols were said: never handed a connection
        try:
            s.send(b"H %d" % PROTOCOL)
        except OSError:
            self.forget(s)
            return
        if int(words[1]) != PROTOCOL:
            self.forget(s)
            return
        f.session = int(words[2]) or None
        f.joined = True

    def forget(self, s):
        if self.followers.pop(s.fileno(), None) is not None:
            self.sel.unregister(s)
            s.close()

    def read_leader(self):
        try:
            msg, fds, _, _ = socket.recv_fds(self.leader, 16, 8)
        except BlockingIOError:
            return
        except OSError:
            msg, fds = b"", []
        for fd in fds:
            self.adopt(socket.socket(fileno=fd))
        if not msg:
            # The leader went away without us: take over its listener, or join the next leader.
            self.sel.unregister(self.leader)
            self.leader.close()
            self.leader = None
            self.retry_at = time.monotonic()

    def retry(self):
        self.retry_at = None
        if self.try_lock():
            self.become_leader()
        elif not self.join_leader():
            self.retry_at = time.monotonic() + 0.02

    def cleanup(self):
        """Removes what this helper made; once, however it ends (but SIGKILL)."""
        self.close_rendezvous()
        leader = self.listener is not None
        for s in (self.listener, self.ctl):
            if s is not None:
                s.close()
        self.listener = self.ctl = None
        for path, ino in self.inodes.items():
            try:
                if os.lstat(path).st_ino == ino:
                    os.unlink(path)
            except OSError:
                pass
        self.inodes = {}
        if leader:
            try:
                os.unlink(self.path + ".lock")  # still locked: the next one re-checks the inode
            except OSError:
                pass

    def done(self):
        if self.up_alive:
            return False
        if self.listener is not None and self.followers:
            return False
        return True

    # ---- the loop ----

    def run(self):
        # Each connection holds six descriptors (two sockets, two pipes): as many as allowed.
        try:
            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (OSError, ValueError):
            pass
        threading.stack_size(512 * 1024)  # two copying threads per connection need little
        for fd in (0, 1):
            os.set_blocking(fd, False)
        self.sel.register(0, R, "in")
        self.prepare_dir()
        self.open_lock()
        role = self.attach(time.monotonic() + 10)
        rendezvous = self.listen_rendezvous()
        self.frame(READY, 0, ("%s %s" % (role, rendezvous)).encode())
        self.flush()
        while not self.done():
            timeout = None
            if self.retry_at is not None:
                timeout = max(0.0, self.retry_at - time.monotonic())
            for key, mask in self.sel.select(timeout):
                what = key.data
                if what == "in":
                    self.read_upstream()
                elif what == "out":
                    pass  # flushed below
                elif what == "accept":
                    self.accept_clients()
                elif what == "rendezvous":
                    self.accept_channels()
                elif what == "ctl-accept":
                    self.accept_follower()
                elif what == "follower":
                    self.read_follower(key.fileobj)
                elif what == "leader":
                    self.read_leader()
            if self.retry_at is not None and time.monotonic() >= self.retry_at:
                self.retry()
            self.flush()


def main(argv):
    mkdir = False
    if len(argv) >= 2 and argv[0] == "serve" and argv[1] == "--mkdir":
        mkdir = True
        argv = argv[:1] + argv[2:]
    if len(argv) != 2 or argv[0] != "serve":
        sys.stderr.write("usage: serve [--mkdir] PATH\n")
        return 64
    bridge = Bridge(argv[1], mkdir)

    def stop(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, stop)
    try:
        bridge.run()
    except Fatal as e:
        bridge.out = bytearray()
        bridge.frame(ERROR, 0, str(e).encode())
        os.set_blocking(1, True)
        os.write(1, bridge.out)
        return 1
    finally:
        bridge.cleanup()
    return 0


sys.exit(main(sys.argv[1:]))
