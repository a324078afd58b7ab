#!/usr/bin/env python3
"""test-install: `make install DESTDIR=...` installs what it says, and each piece works.

Runs `make install DESTDIR=<tmp> BUILD=<this build>` (the build's own
prefix, so the build folder under test is not configured again), then:

  - the files installed are exactly the list the Makefile and
    deploy/meson.build promise: the binary, quire(1) and quire-COMMAND(1)
    for every command `quire --help` lists, the bash, zsh and fish
    completions, the systemd unit (ExecStart= naming the installed binary)
    and the sysusers.d file; the installed binary runs;
  - every page renders with `MANWIDTH=80 man -l --warnings` without a
    warning, `man` finds each by name under the installed MANPATH, and
    each page holds every option its command's `quire help CMD` names;
  - the completions load in real shells and complete: bash and zsh
    interactively on a terminal (a pty; TAB pressed, then a key bound to
    write the line out), a command name (`quire se` TAB: `quire serve `),
    an option (`quire serve --vau` TAB) and, in bash, a folder with a
    space in its name; fish through `complete -C` with the installed
    folder on its completion path and the installed binary on PATH.

A shell or man that is missing fails the test (scripts/setup --tests
installs them).
"""
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from quiretest import QUIRE, ROOT, check, summary  # noqa: E402

BUILD = os.environ.get("QUIRE_BUILD_ROOT", os.path.join(ROOT, "build"))


def prefix_of(build):
    r = subprocess.run(["meson", "introspect", build, "--buildoptions"], capture_output=True,
                       text=True, check=True)
    return next(o["value"] for o in json.loads(r.stdout) if o["name"] == "prefix")


def commands():
    out = subprocess.run([QUIRE, "--help"], capture_output=True, text=True).stdout
    block = out.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines()]


def installed(root):
    files = set()
    for d, _, names in os.walk(root):
        files |= {os.path.relpath(os.path.join(d, n), root) for n in names}
    return files


def check_files(dest, prefix, cmds):
    p = prefix.lstrip("/")
    zsh = "share/zsh/vendor-completions" if prefix == "/usr" else "share/zsh/site-functions"
    want = {p + "/bin/quire", p + "/share/man/man1/quire.1",
            p + "/share/bash-completion/completions/quire", p + "/" + zsh + "/_quire",
            p + "/share/fish/vendor_completions.d/quire.fish",
            p + "/lib/systemd/system/quire.service", p + "/lib/sysusers.d/quire.conf"}
    want |= {p + "/share/man/man1/quire-%s.1" % c for c in cmds}
    got = installed(dest)
    check(got == want, "make install installs exactly %d files (missing %s, more %s)" %
          (len(want), sorted(want - got), sorted(got - want)))
    with open(os.path.join(dest, p, "lib/systemd/system/quire.service")) as f:
        unit = f.read()
    check("ExecStart=%s/bin/quire serve " % prefix in unit,
          "the installed unit's ExecStart names %s/bin/quire" % prefix)
    r = subprocess.run([os.path.join(dest, p, "bin/quire"), "--version"], capture_output=True,
                       text=True)
    check(r.returncode == 0 and r.stdout.startswith("quire "), "the installed quire runs")


def check_man(dest, prefix, cmds):
    mandir = os.path.join(dest, prefix.lstrip("/"), "share/man")
    env = dict(os.environ, MANWIDTH="80", MANPATH=mandir, MAN_DISABLE_SECCOMP="1")
    env.pop("MANPAGER", None)
    for page, helpargs in [("quire", ["--help"])] + [("quire-" + c, ["help", c]) for c in cmds]:
        path = os.path.join(mandir, "man1", page + ".1")
        r = subprocess.run(["man", "-l", "--warnings", path], capture_output=True, text=True,
                           env=dict(env, PAGER="cat"))
        check(r.returncode == 0 and not r.stderr.strip(),
              "man -l --warnings %s.1: exit %d, no warning (%s)" % (page, r.returncode,
                                                                  r.stderr.strip()[:300]))
        text = re.sub(r".\x08", "", r.stdout)  # bold and underline as overstrikes
        helptext = subprocess.run([QUIRE] + helpargs, capture_output=True, text=True).stdout
        opts = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", helptext))
        lost = sorted(o for o in opts if not re.search(r"(?<![\w-])%s(?![\w-])" % o, text))
        check(opts <= {"--help", "--version"} or not lost,
              "%s(1) has every option of quire %s (missing %s)" % (page, " ".join(helpargs), lost))
        check("NAME" in text and "SYNOPSIS" in text, "%s(1) has NAME and SYNOPSIS" % page)
        r = subprocess.run(["man", "-w", page], capture_output=True, text=True, env=env)
        check(r.stdout.strip() == path, "man -w %s finds the installed page (%s)" %
              (page, r.stdout.strip() or r.stderr.strip()))
    r = subprocess.run(["man", "-l", os.path.join(mandir, "man1", "quire.1")], capture_output=True,
                       text=True, env=dict(env, PAGER="cat"))
    for c in cmds:
        check("quire-%s(1)" % c in re.sub(r".\x08", "", r.stdout), "quire(1) names quire-%s(1)" % c)


class Terminal:
    """An interactive shell on a pty: lines run in it, keys typed into it."""

    def __init__(self, argv, env, cwd):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        self.seen = b""

    def drain(self, until=None, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    return False
                self.seen += data
            if until is not None and until(self):
                return True
        return False

    def run(self, line):
        """Runs a line; waits for its marker (the output "DONE-2", not the echoed "$((1+1))")."""
        self.seen = b""
        os.write(self.fd, (line + "; echo DONE-$((1+1))\n").encode())
        return self.drain(lambda t: b"DONE-2" in t.seen)

    def line_after(self, keys, out):
        """Types keys, then ^X, which the shell binds to write its line to out."""
        if os.path.exists(out):
            os.unlink(out)
        os.write(self.fd, b"\x15" + keys.encode() + b"\x18")
        self.drain(lambda t: os.path.exists(out))  # written whole, then renamed
        try:
            with open(out) as f:
                return f.read()
        except OSError:
            return None

    def close(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def shell_env(tmp, bindir):
    env = {"PATH": bindir + ":/usr/bin:/bin", "HOME": tmp, "TERM": "xterm", "LANG": "C.UTF-8"}
    return env


def check_bash(dest, prefix, tmp, cwd):
    comp = os.path.join(dest, prefix.lstrip("/"), "share/bash-completion/completions/quire")
    out = os.path.join(tmp, "bash-line")
    t = Terminal(["bash", "--norc", "--noprofile", "-i"],
                 shell_env(tmp, os.path.join(dest, prefix.lstrip("/"), "bin")), cwd)
    try:
        check(t.run("PS1='$ '; source '%s'; bind -x '\"\\C-x\": printf %%s \"$READLINE_LINE\" > %s.new; mv %s.new %s'"
                    % (comp, out, out, out)), "bash loads the completion (%r)" % t.seen[-300:])
        for keys, want in (("quire se\t", "quire serve "), ("quire serve --vau\t", "quire serve --vault "),
                           ("quire help ex\t", "quire help export "),
                           ("quire sync my\t", "quire sync my\\ notes/")):
            got = t.line_after(keys, out)
            check(got == want, "bash: %r TAB gives %r (got %r)" % (keys, want, got))
    finally:
        t.close()


def check_zsh(dest, prefix, tmp, cwd):
    p = prefix.lstrip("/")
    zdir = os.path.join(dest, p, "share/zsh/vendor-completions" if prefix == "/usr"
                        else "share/zsh/site-functions")
    out = os.path.join(tmp, "zsh-line")
    t = Terminal(["zsh", "-f", "-i"], shell_env(tmp, os.path.join(dest, p, "bin")), cwd)
    try:
        check(t.run("PS1='%%%% '; bindkey -e; fpath=('%s' $fpath); autoload -Uz compinit; "
                    "compinit -u -D; dump() { print -rn -- \"$BUFFER\" > %s.new; mv %s.new %s }; "
                    "zle -N dump; bindkey '^X' dump" % (zdir, out, out, out)), "zsh loads compinit (%r)" % t.seen[-300:])
        for keys, want in (("quire se\t", "quire serve "), ("quire serve --vau\t", "quire serve --vault"),
                           ("quire help sy\t", "quire help sync ")):
            got = t.line_after(keys, out)
            check(got is not None and got.rstrip("= ") == want.rstrip(" ") and got.startswith(want),
                  "zsh: %r TAB gives %r (got %r)" % (keys, want, got))
    finally:
        t.close()


def check_fish(dest, prefix, tmp):
    fdir = os.path.join(dest, prefix.lstrip("/"), "share/fish/vendor_completions.d")
    for line, want in (("quire se", "serve"), ("quire serve --va", "--vault"),
                       ("quire export --inc", "--incremental")):
        # fish loads a command's completions only when the command is on PATH
        r = subprocess.run(["fish", "-c",
                            "set -g fish_complete_path %s $fish_complete_path; complete -C %s" %
                            (fdir, shlex_quote(line))],
                           capture_output=True, text=True,
                           env=shell_env(tmp, os.path.join(dest, prefix.lstrip("/"), "bin")))
        got = [x.split("\t")[0] for x in r.stdout.splitlines()]
        check(want in got, "fish: %r completes to %r (got %s; %s)" % (line, want, got,
                                                                   r.stderr.strip()[:200]))


def shlex_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main():
    for tool in ("make", "meson", "man", "bash", "zsh", "fish"):
        check(shutil.which(tool) is not None, "%s is installed (scripts/setup --tests)" % tool)
    tmp = tempfile.mkdtemp(prefix="quire-install-")
    try:
        dest = os.path.join(tmp, "root")
        prefix = prefix_of(BUILD)
        r = subprocess.run(["make", "-C", ROOT, "install", "DESTDIR=" + dest, "BUILD=" + BUILD,
                            "PREFIX=" + prefix], capture_output=True, text=True)
        check(r.returncode == 0, "make install DESTDIR=%s: %s" % (dest, r.stderr[-800:]))
        cmds = commands()
        check(len(cmds) >= 4, "quire --help lists the commands (%s)" % cmds)
        check_files(dest, prefix, cmds)
        check_man(dest, prefix, cmds)
        cwd = os.path.join(tmp, "cwd")
        os.makedirs(os.path.join(cwd, "my notes"))
        check_bash(dest, prefix, tmp, cwd)
        check_zsh(dest, prefix, tmp, cwd)
        check_fish(dest, prefix, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
