#!/usr/bin/env python3
"""test-systemd: deploy/quire.service is a valid, hardened unit, and quire speaks to systemd.

systemd is not PID 1 here, so the unit is checked with systemd's own
tools and its command line is run by the test, which plays the service
manager's part:

  - `systemd-analyze verify` passes on the unit as shipped, with only
    ExecStart='s binary pointed at this build (MANPATH at the generated
    man pages, which verify opens for Documentation=);
  - `systemd-analyze security --offline=true --threshold=20`: the
    exposure systemd computes for the unit is at most 2.0 (of 10);
  - `systemd-sysusers --root` with deploy/quire.sysusers creates the user
    and group quire the unit runs as;
  - quire run with the unit's ExecStart= (the vault, %S, the port put
    somewhere of the test's), $NOTIFY_SOCKET a datagram socket the test
    holds (a path, and again "@name" in the abstract namespace) and
    $CREDENTIALS_DIRECTORY holding the credential `token`: the first
    message is READY=1 (with a STATUS=), and when it arrives /healthz is
    200, the home page is served, and the sync API takes the credential's
    token and refuses a request without it; SIGTERM brings STOPPING=1 and
    exit 0. Run on pwsh-docs (1,120 notes, a load long enough that a
    READY sent before it would be seen) when ../shared/corpus is there,
    else on vault-sample; as the user nobody when the test runs as root
    (the unit's User= is never root);
  - the same run under strace: every system call quire makes, loading,
    serving, writing a note through the sync API, reloading on SIGHUP and
    stopping, is in the unit's SystemCallFilter= (@system-service without
    @privileged, as systemd-analyze syscall-filter lists them), and every
    socket it opens is of a family RestrictAddressFamilies= allows.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from quiretest import QUIRE, ROOT, check, fetch, free_port, summary  # noqa: E402

UNIT = os.path.join(ROOT, "deploy", "quire.service")
SYSUSERS = os.path.join(ROOT, "deploy", "quire.sysusers")
BUILD = os.environ.get("QUIRE_BUILD_ROOT", os.path.join(ROOT, "build"))
CORPUS = os.environ.get("QUIRE_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))
TOKEN = "test-systemd-token-0123456789abcdef"


def unit_text():
    with open(UNIT) as f:
        return f.read()


def directives(text, name):
    return [m.group(1).strip() for m in re.finditer(r"^%s=(.*)$" % name, text, re.M)]


def man_tree(tmp):
    """The man pages the build generated, as a MANPATH (man1/...)."""
    d = os.path.join(tmp, "man", "man1")
    os.makedirs(d)
    for name in os.listdir(os.path.join(BUILD, "deploy")):
        if name.endswith(".1"):
            shutil.copy(os.path.join(BUILD, "deploy", name), d)
    return os.path.dirname(d)


def check_verify(tmp):
    unit = os.path.join(tmp, "quire.service")
    with open(unit, "w") as f:
        f.write(unit_text().replace("/usr/local/bin/quire", os.path.abspath(QUIRE)))
    r = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True,
                       env=dict(os.environ, MANPATH=man_tree(tmp)))
    check(r.returncode == 0 and not r.stderr.strip(),
          "systemd-analyze verify: exit %d, %s" % (r.returncode, r.stderr.strip()[:500]))
    r = subprocess.run(["systemd-analyze", "security", "--offline=true", "--threshold=20", unit],
                       capture_output=True, text=True)
    level = re.search(r"Overall exposure level for quire.service: ([0-9.]+)", r.stdout)
    check(r.returncode == 0 and level,
          "systemd-analyze security: exposure at most 2.0 (%s)" % (level.group(1) if level else
                                                                   r.stdout[-300:] + r.stderr))
    print("systemd-analyze security: exposure %s" % (level.group(1) if level else "?"))


def check_sysusers(tmp):
    root = os.path.join(tmp, "sysroot")
    os.makedirs(os.path.join(root, "etc"))
    r = subprocess.run(["systemd-sysusers", "--root=" + root, SYSUSERS], capture_output=True,
                       text=True)
    check(r.returncode == 0, "systemd-sysusers accepts quire.sysusers: %s" % r.stderr.strip())
    passwd = open(os.path.join(root, "etc", "passwd")).read() if r.returncode == 0 else ""
    group = open(os.path.join(root, "etc", "group")).read() if r.returncode == 0 else ""
    text = unit_text()
    user, grp = directives(text, "User")[0], directives(text, "Group")[0]
    check(re.search(r"^%s:x:\d+:\d+:" % user, passwd, re.M) is not None,
          "systemd-sysusers creates the unit's User=%s" % user)
    check(re.search(r"^%s:x:\d+:" % grp, group, re.M) is not None,
          "systemd-sysusers creates the unit's Group=%s" % grp)


def exec_start(tmp, vault, port):
    """The unit's ExecStart=, with the test's binary, vault, state folder and port."""
    line = directives(unit_text(), "ExecStart")[0]
    paths = directives(unit_text(), "ReadWritePaths")
    check(len(paths) == 1 and ("--vault %s " % paths[0]) in line,
          "ExecStart= serves the vault that ReadWritePaths= opens (%s)" % paths)
    state = os.path.join(tmp, "state")
    os.makedirs(state, exist_ok=True)
    # the service user must reach the binary: a checkout under a private
    # folder (mktemp -d makes them 0700) would not let it, so it runs a copy
    binary = os.path.join(tmp, "bin", "quire")
    if not os.path.exists(binary):
        os.makedirs(os.path.dirname(binary), exist_ok=True)
        shutil.copy2(os.path.abspath(QUIRE), binary)
    line = line.replace("/usr/local/bin/quire", binary)
    line = line.replace("--vault %s " % paths[0], "--vault %s " % vault)
    line = line.replace("%S", state).replace("127.0.0.1:8080", "127.0.0.1:%d" % port)
    check("%" not in line, "ExecStart= has no specifier the test does not know: " + line)
    return line.split(), os.path.join(state, "quire")


class Notify:
    """The service manager's end of $NOTIFY_SOCKET: a datagram socket."""

    def __init__(self, tmp, abstract):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = "quire-test-notify-%d" % os.getpid()
            self.sock.bind("\0" + name)
            self.address = "@" + name
        else:
            self.address = os.path.join(tmp, "notify")
            self.sock.bind(self.address)

    def next(self, timeout, proc=None):
        """The next message, or None after timeout seconds or once proc has exited."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(min(left, 1.0))
            try:
                return self.sock.recv(4096).decode()
            except socket.timeout:
                if proc is not None and proc.poll() is not None:
                    return None

    def close(self):
        self.sock.close()
        if self.address.startswith("/"):
            os.unlink(self.address)


def pick_vault(tmp):
    src = os.path.join(CORPUS, "pwsh-docs")
    if not os.path.isdir(src):
        print("  skipped: the run on pwsh-docs needs ../shared/corpus (a load long enough to "
              "see a READY=1 sent too early); running on vault-sample", file=sys.stderr)
        src = os.path.join(ROOT, "vault-sample")
    vault = os.path.join(tmp, "vault")
    shutil.copytree(src, vault, ignore=shutil.ignore_patterns(".quire"))
    return vault


def run_service(tmp, vault, abstract, strace=None):
    port = free_port()
    argv, data = exec_start(tmp, vault, port)
    creds = os.path.join(tmp, "creds")
    os.makedirs(creds, exist_ok=True)
    with open(os.path.join(creds, "token"), "w") as f:
        f.write(TOKEN + "\n")
    note = Notify(tmp, abstract)
    env = dict(os.environ, NOTIFY_SOCKET=note.address, CREDENTIALS_DIRECTORY=creds)
    env.pop("QUIRE_TOKEN", None)
    if strace:
        argv = ["strace", "-f", "-qq", "-o", strace, "-e", "trace=all"] + argv
        # LeakSanitizer cannot run under ptrace (the other runs check leaks)
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    argv = as_service_user(tmp, note) + argv
    log = open(os.path.join(tmp, "serve.log"), "w")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    what = "NOTIFY_SOCKET=%s%s" % (note.address, " under strace" if strace else "")
    quire = proc
    try:
        first = note.next(300, proc)
        check(first is not None and first.split("\n")[0] == "READY=1",
              "%s: the first message is READY=1 (got %r)" % (what, first))
        check(first is not None and "\nSTATUS=serving " in first,
              "%s: READY=1 comes with STATUS=serving ... (%r)" % (what, first))
        # the moment READY=1 arrives, the site is served
        st, _, body, _ = get(port, "/healthz")
        check(st == 200, "%s: /healthz is 200 when READY=1 arrives (%d %r)" % (what, st, body[:200]))
        st, _, body, _ = get(port, "/")
        check(st == 200 and b"<html" in body, "%s: the home page is served when READY=1 arrives"
              % what)
        auth = {"Authorization": "Bearer " + TOKEN}
        st, _, _, _ = get(port, "/api/v1/manifest", headers=auth)
        check(st == 200, "%s: the sync API takes the credential's token (%d)" % (what, st))
        st, _, _, _ = get(port, "/api/v1/manifest")
        check(st == 401, "%s: the sync API refuses a request without it (%d)" % (what, st))
        if strace:
            quire = Child(proc.pid)  # signals go to quire, not to strace
            exercise(port, auth, quire)
        quire.send_signal(signal.SIGTERM)
        msg = note.next(60, proc)
        check(msg is not None and "STOPPING=1" in msg.split("\n"),
              "%s: SIGTERM brings STOPPING=1 (got %r)" % (what, msg))
        rc = proc.wait(60)
        check(rc == 0, "%s: quire exits 0 after SIGTERM (%d)" % (what, rc))
        check(os.path.isdir(data), "%s: the data folder is the unit's (%s)" % (what, data))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        note.close()
        log.close()
    if summary_failed():
        with open(os.path.join(tmp, "serve.log")) as f:
            print("  quire's output:\n" + f.read()[-2000:], file=sys.stderr)


def get(port, path, method="GET", body=None, headers=None):
    """fetch(), with a refused connection as status 0."""
    try:
        return fetch(port, "127.0.0.1", path, method, body, headers)
    except OSError as e:
        return 0, None, str(e).encode(), None


def summary_failed():
    from quiretest import _counts
    return _counts["failed"] > 0


def as_service_user(tmp, note):
    """
    The unit runs quire as a user of its own (User=), never as root, and
    some libraries act differently for root (SQLite fchown()s its journal
    to the database's owner: a call @privileged holds). Run as root, the
    test runs quire as nobody, owning what the service would own.
    """
    if os.geteuid() != 0:
        return []
    os.chmod(tmp, 0o755)
    for d, dirs, files in os.walk(tmp):
        for x in [d] + [os.path.join(d, n) for n in files]:
            os.lchown(x, 65534, 65534)
        os.chmod(d, os.stat(d).st_mode | 0o700)  # the corpus's folders are read-only
    if note.address.startswith("/"):
        os.chmod(note.address, 0o666)
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


class Child:
    """The process strace started (quire), to be signalled as the unit's main process is."""

    def __init__(self, parent):
        with open("/proc/%d/task/%d/children" % (parent, parent)) as f:
            self.pid = int(f.read().split()[0])

    def send_signal(self, sig):
        os.kill(self.pid, sig)


def exercise(port, auth, proc):
    """What a service does in its life: pages, a note written, a reload."""
    for path in ("/", "/_quire/tree.json", "/search?q=the", "/api/search?q=the", "/no-such-page"):
        get(port, path)
    st, _, body, _ = get(port, "/api/v1/files/strace-note.md", "PUT",
                           b"# Written under strace\n\nA note.\n", auth)
    check(st in (200, 201, 204), "a note written through the sync API (%d %r)" % (st, body[:200]))
    for _ in range(200):
        if get(port, "/strace-note")[0] == 200:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGHUP)
    for _ in range(200):  # the reload publishes again: the page is still there after it
        time.sleep(0.05)
        if get(port, "/strace-note")[0] == 200:
            break


def expand(group, seen=None):
    """The system calls of a systemd-analyze syscall-filter group, groups inside expanded."""
    seen = set() if seen is None else seen
    r = subprocess.run(["systemd-analyze", "syscall-filter", group], capture_output=True,
                       text=True, check=True)
    calls = set()
    for line in r.stdout.splitlines()[1:]:
        x = line.strip()
        if not x or x.startswith("#"):
            continue
        if x.startswith("@"):
            if x not in seen:
                seen.add(x)
                calls |= expand(x, seen)
        else:
            calls.add(x)
    return calls


def check_syscalls(tmp, vault):
    if not shutil.which("strace"):
        check(False, "strace is installed (scripts/setup --tests)")
        return
    trace = os.path.join(tmp, "strace.out")
    run_service(tmp, vault, False, strace=trace)
    allowed, denied, families = set(), set(), set()
    for f in directives(unit_text(), "SystemCallFilter"):
        names = set()
        for g in f.lstrip("~").split():
            names |= expand(g) if g.startswith("@") else {g}
        (denied if f.startswith("~") else allowed).update(names)
    for f in directives(unit_text(), "RestrictAddressFamilies"):
        families |= set(f.split())
    used, opened = set(), set()
    with open(trace, errors="replace") as f:
        for line in f:
            m = re.match(r"\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]", line)
            if m and not line.split(None, 1)[1].startswith(("---", "+++")):
                used.add(m.group(1))
            m = re.search(r"\bsocket\((AF_[A-Z0-9]+)", line)
            if m:
                opened.add(m.group(1))
    bad = sorted(c for c in used if c not in allowed or c in denied)
    check(len(used) > 30, "strace saw quire's system calls (%d)" % len(used))
    check(not bad, "every system call quire made is in SystemCallFilter= (not: %s)" % bad)
    check(opened and opened <= families, "every socket quire opened is of a family "
          "RestrictAddressFamilies= allows (%s)" % sorted(opened))
    print("%d distinct system calls, all allowed; socket families %s" % (len(used), sorted(opened)))


def main():
    for tool in ("systemd-analyze", "systemd-sysusers"):
        if not shutil.which(tool):
            check(False, "%s is installed (scripts/setup --tests: Debian's systemd)" % tool)
            return summary()
    tmp = tempfile.mkdtemp(prefix="quire-systemd-")
    try:
        check_verify(tmp)
        check_sysusers(tmp)
        vault = pick_vault(tmp)
        run_service(tmp, vault, abstract=False)
        run_service(tmp, vault, abstract=True)
        # strace -f slows every system call of every thread many times
        # over: the filter is checked on vault-sample's load, which makes
        # the same kinds of calls as a larger vault's
        small = os.path.join(tmp, "small")
        shutil.copytree(os.path.join(ROOT, "vault-sample"), small,
                        ignore=shutil.ignore_patterns(".quire"))
        check_syscalls(tmp, small)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
