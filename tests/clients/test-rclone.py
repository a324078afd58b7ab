#!/usr/bin/env python3
"""test-rclone: `rclone sync` of pwsh-docs into quire's WebDAV endpoint.

    QUIRE_BIN=build/quire QUIRE_CORPUS=../shared/corpus tests/clients/test-rclone.py

Starts the real `$QUIRE_BIN serve --token-file --no-watch` on an empty
vault and syncs a copy of $QUIRE_CORPUS/pwsh-docs (1,120 notes and 79
other files, plus an `.obsidian/app.json` the test adds) into /dav/ with
Debian's rclone (1.60), configured only through environment variables
(RCLONE_CONFIG_Q_TYPE=webdav, _URL, _VENDOR=other, _USER, _PASS obscured):
no config file. rclone runs with --retries 1 --low-level-retries 1, so a
request the server gets wrong is an error here, not retried away.

Asserts:
  - the first sync transfers every file without an error, and
    `rclone check --download` finds every file's bytes the same over GET;
  - every note's page is then served (200), and .obsidian/app.json is
    stored (listed, fetched back) but not published (404 on the site);
  - a second sync transfers and deletes nothing (its JSON stats);
  - an edit that changes a note's size, a delete and a move (to a new
    folder) made locally reach the site with the next sync: the edited
    page shows the new text, the deleted one answers 404, the moved one
    answers at its new URL and its old one redirects there (rclone, by
    default, uploads the moved file and deletes the old one after, often
    in another of quire's changes: quire pairs the deletion with the
    upload of the same bytes that came first); that sync transfers exactly
    2 files and deletes 2;
  - what rclone decides with vendor=other (docs/editors.md says it): the
    server has no hash rclone knows and rclone sets no modification time
    there, so it compares sizes only. An edit that keeps a note's size is
    NOT sent by `rclone sync`; `rclone copyto --ignore-times` sends it.

Without the shared corpus, on 450 generated notes and 20 attachments
instead. Exit 77 (meson's "skipped") when rclone is missing.
Prints "N passed, N failed" like the C tests.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

from davsite import LIVE_TIMEOUT, Site, note_url, quiretest, serve

check = quiretest.check
CORPUS = os.environ.get("QUIRE_CORPUS", os.path.join(quiretest.ROOT, "..", "shared", "corpus"))


class Stop(Exception):
    """The rest of the steps would only fail the same way."""


def rclone(argv, env, what):
    """Runs rclone with JSON logs; returns (exit code, final stats, [(level, msg, object)]),
    a line of output that is not JSON (lsf's) as ("raw", line, "")."""
    r = subprocess.run(["rclone", *argv, "--config", "/dev/null", "--use-json-log", "-v",
                        "--retries", "1", "--low-level-retries", "1"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600)
    stats, lines = {}, []
    for line in r.stdout.splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            lines.append(("raw", line, ""))
            continue
        if "stats" in j:
            stats = j["stats"]
        lines.append((j.get("level", ""), j.get("msg", ""), j.get("object", "")))
    errors = [l for l in lines if l[0] in ("error", "critical")]
    if r.returncode != 0 or errors:
        print("  %s: rclone exited %d; first errors:" % (what, r.returncode), file=sys.stderr)
        for l in errors[:10]:
            print("    %s %s: %s" % l[:3], file=sys.stderr)
    return r.returncode, stats, lines


def notes_of(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        for f in files:
            if f.endswith(".md"):
                out.append(os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/"))
    return sorted(out)


def append(path, text):
    with open(path, "a") as fh:
        fh.write(text)


def generated_vault(dst, missing):
    """Without the shared corpus: 450 notes in folders, linking each other,
    and 20 attachments, so the syncs run in any clone that has rclone."""
    print("  no %s (the shared corpus): on 450 generated notes" % missing, file=sys.stderr)
    for i in range(450):
        folder = os.path.join(dst, "part %d" % (i % 9), "sub %d" % (i % 4))
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "Note %03d.md" % i), "w") as fh:
            fh.write("# Note %03d\n\n## Usage\n\nSee [[Note %03d]] and ![[pic %d.png]].\n\n%s\n"
                     % (i, (i + 1) % 450, i % 20, "Some words of the note. " * (i % 40 + 1)))
    os.makedirs(os.path.join(dst, "media"), exist_ok=True)
    for i in range(20):
        with open(os.path.join(dst, "media", "pic %d.png" % i), "wb") as fh:
            fh.write(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * (i + 1))


def main():
    corpus = os.path.join(CORPUS, "pwsh-docs")
    if not shutil.which("rclone"):
        print("skipped: needs rclone (Debian's, which scripts/setup installs): the syncs are "
              "rclone's", file=sys.stderr)
        return 77
    work = tempfile.mkdtemp(prefix="quire-rclone-")
    proc = None
    try:
        src = os.path.join(work, "local")
        vault = os.path.join(work, "vault")
        if os.path.isdir(corpus):
            shutil.copytree(corpus, src)
        else:
            generated_vault(src, corpus)
        os.makedirs(vault)
        os.makedirs(os.path.join(src, ".obsidian"))
        with open(os.path.join(src, ".obsidian", "app.json"), "w") as fh:
            fh.write('{"alwaysUpdateLinks": true}\n')
        notes = notes_of(src)
        edited, samesize, deleted, moved = notes[100], notes[200], notes[300], notes[400]
        # markers the test can look for on the pages
        append(os.path.join(src, samesize), "\n\nsamesize-marker-AAAA\n")
        append(os.path.join(src, moved), "\n\nmoved-marker-QX7\n")

        proc, port, token = serve(vault, work)
        site = Site(port)
        env = dict(os.environ, RCLONE_CONFIG_Q_TYPE="webdav",
                   RCLONE_CONFIG_Q_URL="http://127.0.0.1:%d/dav/" % port,
                   RCLONE_CONFIG_Q_VENDOR="other", RCLONE_CONFIG_Q_USER="quire",
                   RCLONE_CONFIG_Q_PASS=subprocess.run(
                       ["rclone", "obscure", token], stdout=subprocess.PIPE, text=True,
                       check=True).stdout.strip())
        nfiles = sum(len(f) for _, _, f in os.walk(src))

        # 1. the first sync: everything
        code, st, _ = rclone(["sync", src, "q:"], env, "first sync")
        check(code == 0 and st.get("errors") == 0,
              "the first sync ends without an error (exit %d, %s errors)" % (code, st.get("errors")))
        check(st.get("transfers") == nfiles,
              "the first sync transfers all %d files (%s)" % (nfiles, st.get("transfers")))
        code, st, _ = rclone(["check", src, "q:", "--download"], env, "check --download")
        check(code == 0, "rclone check --download: every file's bytes come back the same "
              "(exit %d)" % code)

        if not st.get("transfers"):
            print("  nothing was transferred: the rest is not tried", file=sys.stderr)
            raise Stop()
        missing = []
        deadline = time.monotonic() + 2 * LIVE_TIMEOUT   # for all of them together
        for n in notes:
            ok, status = site.shows(note_url(n), b"<html",
                                    timeout=max(0.0, deadline - time.monotonic()))
            if not ok:
                missing.append("%s (%s): %d" % (n, note_url(n), status))
        check(not missing, "every one of the %d notes' pages is served after the sync; %d are "
              "not, e.g. %s" % (len(notes), len(missing), missing[:3]))
        ok, status = site.gone("/.obsidian/app.json", timeout=0.1)
        check(ok, ".obsidian/app.json is not published (%d)" % status)
        code, st, lines = rclone(["lsf", "-R", "q:.obsidian"], env, "lsf .obsidian")
        listed = [l[1] for l in lines if l[0] == "raw"]
        check(code == 0 and "app.json" in listed, ".obsidian/app.json is listed over "
              "WebDAV (%s)" % listed)

        # 2. a second sync finds nothing to do
        code, st, lines = rclone(["sync", src, "q:"], env, "second sync")
        check(code == 0 and st.get("transfers") == 0 and st.get("deletes") == 0,
              "a second sync transfers and deletes nothing (exit %d, %s transfers, %s deletes)"
              % (code, st.get("transfers"), st.get("deletes")))

        # 3. local changes: an edit (the size changes), a delete, a move to a
        # new folder; and an edit that keeps the size
        append(os.path.join(src, edited), "\n\nrclone-edit-marker-Q1 reaches the site.\n")
        os.unlink(os.path.join(src, deleted))
        to = "Moved by rclone/" + os.path.basename(moved)
        os.makedirs(os.path.join(src, "Moved by rclone"))
        os.rename(os.path.join(src, moved), os.path.join(src, to))
        p = os.path.join(src, samesize)
        with open(p) as fh:
            text = fh.read()
        with open(p, "w") as fh:
            fh.write(text.replace("samesize-marker-AAAA", "samesize-marker-BBBB"))
        # rclone's default order: the uploads, then the deletions (quire
        # pairs a deletion with an earlier upload of the same bytes: urls.c,
        # "the arrived")
        code, st, lines = rclone(["sync", src, "q:"], env, "sync of the changes")
        check(code == 0 and st.get("transfers") == 2 and st.get("deletes") == 2,
              "the changes' sync transfers 2 files and deletes 2 (exit %d, %s, %s)"
              % (code, st.get("transfers"), st.get("deletes")))
        ok, status = site.shows(note_url(edited), "rclone-edit-marker-Q1")
        check(ok, "the edited note's page %s shows the new text (%d)" % (note_url(edited), status))
        ok, status = site.gone(note_url(deleted))
        check(ok, "the deleted note's page %s answers 404 (%d)" % (note_url(deleted), status))
        ok, status = site.shows(note_url(to), "moved-marker-QX7")
        check(ok, "the moved note answers at its new URL %s (%d)" % (note_url(to), status))
        # rclone moves as a delete and an upload; quire pairs the two (the
        # same bytes and file name) into a move, whose old URL redirects
        ok, status = site.gone(note_url(moved), allowed=(301,))
        loc = site.get(note_url(moved))[1].get("location", "")
        check(ok and urllib.parse.urlsplit(loc).path == note_url(to),
              "the moved note's old URL %s redirects to the new one (%d %s)"
              % (note_url(moved), status, loc))
        sent = [l for l in lines if l[2] == samesize]
        check(not sent, "vendor=other compares sizes only: the same-size edit of %s is not "
              "sent (%s)" % (samesize, sent))
        status, _, body = site.get(note_url(samesize))
        check(status == 200 and b"samesize-marker-AAAA" in body,
              "so its page still shows the old text (%d)" % status)
        code, st, _ = rclone(["copyto", "--ignore-times", p, "q:" + samesize], env,
                             "copyto --ignore-times")
        check(code == 0 and st.get("transfers") == 1,
              "rclone copyto --ignore-times sends it (%s transfers)" % st.get("transfers"))
        ok, status = site.shows(note_url(samesize), "samesize-marker-BBBB")
        check(ok, "and then its page shows the new text (%d)" % status)

        code, st, _ = rclone(["sync", src, "q:"], env, "last sync")
        check(code == 0 and st.get("transfers") == 0 and st.get("deletes") == 0,
              "after the changes a sync again transfers nothing (%s, %s)"
              % (st.get("transfers"), st.get("deletes")))
        check(proc.poll() is None, "quire serve is still running")
    except Stop:
        pass
    finally:
        if proc is not None and proc.poll() is not None:
            check(False, "quire serve exited during the test, status %d%s" % (
                proc.returncode, " (signal %d)" % -proc.returncode if proc.returncode < 0 else ""))
        quiretest.stop([proc])
        quiretest.log_tail_if_failed(os.path.join(work, "serve.log"))
        shutil.rmtree(work, ignore_errors=True)
    return quiretest.summary()


if __name__ == "__main__":
    sys.exit(main())
