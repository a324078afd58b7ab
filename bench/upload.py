#!/usr/bin/env python3
"""Uploads through the sync API: MB/s over loopback and the server's memory.

    bench/upload.py QUIRE [--sizes 256M,1G] [--time-limit 120] [--json]
                    [--server-cores 0] [--client-core 1]

For each size, one `PUT /api/v1/files/bench/upload-SIZE.bin` with the
right token (`Authorization: Bearer`, `If-None-Match: *`, a
`Content-Length`) to `QUIRE serve --threads 1 --no-watch --token-file
--max-upload` on a vault of one note in a temporary folder (on the disk:
the file is written, fsynced and renamed into the vault, as an editor's
upload is). The client is a child of this script pinned to --client-core,
the server to --server-cores, a new server for each size (so that one
upload's memory does not stand in the next one's "before"); the client
sends a 1 MiB block of random
bytes again and again from one buffer (nothing read from disk, no copy of
the body in the client) and waits for the answer.

  MB/s        the body's MB (10^6 bytes) over the time from the first byte
              of the request to the last of the answer;
  RSS rise    the server's peak resident memory during the upload (VmHWM,
              reset to the current RSS before it through /proc/PID/clear_refs)
              minus its VmRSS just before it;
  CPU         the server's user+system seconds over the upload (/proc/PID/stat).

--time-limit S stops sending after S seconds: the row says "cut", with the
MB sent and the rate until then (a slow front would otherwise take minutes
per size). The answer's status and the file on disk (its size) are checked;
the file is removed before the next size. Prints a line a size, or with
--json one JSON object. Exit 2 if the server died, 1 on another failure.
Python 3 standard library only.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dav import Server, ServerGone  # noqa: E402

BLOCK = 1 << 20
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def log(msg):
    print("upload: " + msg, file=sys.stderr, flush=True)


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if not m or int(m.group(1)) == 0:
        raise argparse.ArgumentTypeError("a size such as 16M or 1G, got %r" % text)
    return int(m.group(1)) * UNITS[m.group(2)]


def size_name(n):
    for unit in ("G", "M", "K"):
        if n % UNITS[unit] == 0:
            return "%d%s" % (n // UNITS[unit], unit)
    return str(n)


def proc_status_kb(pid, key):
    with open("/proc/%d/status" % pid) as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError("no %s in /proc/%d/status" % (key, pid))


def proc_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def client(port, token, path, size, limit):
    """Runs in the pinned child: sends the PUT, reads the answer, prints one
    JSON line {status, sent, seconds, cut, answer}."""
    block = os.urandom(BLOCK)
    view = memoryview(block)
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = ("PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
            "If-None-Match: *\r\nContent-Type: application/octet-stream\r\n"
            "Content-Length: %d\r\n\r\n" % (path, port, token, size)).encode()
    t0 = time.monotonic()
    s.sendall(head)
    sent, cut = 0, False
    while sent < size and not cut:
        if limit:   # a send blocked on a slow reader ends at the limit too
            left = limit - (time.monotonic() - t0)
            s.settimeout(max(left, 0.001))
        try:
            sent += s.send(view[:min(BLOCK, size - sent)])
        except socket.timeout:
            cut = True
        if limit and time.monotonic() - t0 >= limit:
            cut = sent < size
    if cut:
        seconds = time.monotonic() - t0
        s.close()
        print(json.dumps({"status": None, "sent": sent, "seconds": seconds, "cut": True}))
        return
    s.settimeout(600)
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = s.recv(65536)
        if not chunk:
            break
        answer += chunk
    m = re.search(rb"content-length:\s*(\d+)", answer, re.I)
    head_end = answer.find(b"\r\n\r\n") + 4
    while m and len(answer) - head_end < int(m.group(1)):
        chunk = s.recv(65536)
        if not chunk:
            break
        answer += chunk
    seconds = time.monotonic() - t0
    s.close()
    status = re.match(rb"HTTP/1\.1 (\d+)", answer)
    print(json.dumps({"status": int(status.group(1)) if status else None, "sent": sent,
                      "seconds": seconds, "cut": False,
                      "answer": answer[head_end:head_end + 300].decode(errors="replace")}))


def one(srv, vault, size, limit, client_core):
    rel = "bench/upload-%s.bin" % size_name(size)
    pid = srv.proc.pid
    rss0 = proc_status_kb(pid, "VmRSS")
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as fh:
            fh.write("5")   # VmHWM back to the current RSS
        hwm_reset = True
    except OSError:
        hwm_reset = False
    hwm0 = proc_status_kb(pid, "VmHWM")
    cpu0 = proc_cpu_s(pid)
    r = subprocess.run(["taskset", "-c", client_core, sys.executable, os.path.abspath(__file__),
                        "--client", str(srv.port), srv.token, "/api/v1/files/" + rel, str(size),
                        str(limit or 0)], stdout=subprocess.PIPE, text=True,
                       timeout=(limit or 3600) + 900)
    srv.alive("after a PUT of %s" % size_name(size))
    out = json.loads(r.stdout.strip().splitlines()[-1])
    time.sleep(0.2)   # the answer is sent before the handler's last frees
    hwm1, rss1 = proc_status_kb(pid, "VmHWM"), proc_status_kb(pid, "VmRSS")
    row = {"size": size_name(size), "bytes": size, "sent": out["sent"], "cut": out["cut"],
           "status": out["status"], "seconds": round(out["seconds"], 3),
           "mb_s": round(out["sent"] / 1e6 / out["seconds"], 1),
           "rss_before_mb": round(rss0 / 1024, 1), "hwm_before_mb": round(hwm0 / 1024, 1),
           "hwm_after_mb": round(hwm1 / 1024, 1), "rss_after_mb": round(rss1 / 1024, 1),
           "rss_rise_mb": round((hwm1 - rss0) / 1024, 1), "hwm_reset": hwm_reset,
           "server_cpu_s": round(proc_cpu_s(pid) - cpu0, 2)}
    dest = os.path.join(vault, rel)
    if not out["cut"]:
        if out["status"] not in (200, 201):
            raise RuntimeError("PUT %s answered %s: %s" % (rel, out["status"], out.get("answer")))
        if os.path.getsize(dest) != size:
            raise RuntimeError("%s holds %d bytes, not %d" % (dest, os.path.getsize(dest), size))
    if os.path.exists(dest):
        os.unlink(dest)
    return row


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        port, token, path, size, limit = sys.argv[2:7]
        client(int(port), token, path, int(size), float(limit))
        return 0
    ap = argparse.ArgumentParser(description="uploads through the sync API (see the top "
                                             "of this file)")
    ap.add_argument("quire")
    ap.add_argument("--sizes", default="256M,1G", help="body sizes (default 256M,1G)")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="seconds after which a PUT stops sending (default: none)")
    ap.add_argument("--server-cores", default="0")
    ap.add_argument("--client-core", default="1")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    try:
        sizes = [parse_size(x) for x in a.sizes.split(",")]
    except argparse.ArgumentTypeError as e:
        ap.error("--sizes: %s" % e)
    tmp = tempfile.mkdtemp(prefix="quire-upload-", dir=os.environ.get("QUIRE_BENCH_TMP"))
    vault = os.path.join(tmp, "vault")
    os.makedirs(os.path.join(vault, "bench"))
    with open(os.path.join(vault, "index.md"), "w") as fh:
        fh.write("# Uploads\n\nA vault for bench/upload.py.\n")
    srv = None
    rows = []
    try:
        for size in sizes:
            srv = Server(a.quire, vault, tmp, "upload-" + size_name(size), a.server_cores,
                         extra=["--max-upload", str(size)])
            srv.wait_log("search index ready", 60)
            row = one(srv, vault, size, a.time_limit, a.client_core)
            srv.stop()
            rows.append(row)
            log("PUT %s: %s%.1f MB in %.2f s, %.1f MB/s; server RSS %.0f MB before, peak "
                "%.0f MB (+%.0f MB), %.2f s of server CPU" % (
                    row["size"], "CUT at %g s after " % a.time_limit if row["cut"] else "",
                    row["sent"] / 1e6, row["seconds"], row["mb_s"], row["rss_before_mb"],
                    row["hwm_after_mb"], row["rss_rise_mb"], row["server_cpu_s"]))
    except ServerGone as e:
        log("the server died: %s" % e)
        return 2
    finally:
        if srv:
            srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        print(json.dumps({"server_cores": a.server_cores, "time_limit_s": a.time_limit,
                          "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
