"""Runs a command on a pseudo-terminal of its own (its controlling terminal) for a test.

Prints "pid N", then relays what the command writes to the terminal. A line "hangup" on stdin
closes the terminal's master side, as when a terminal window or an SSH session goes away (the
command gets SIGHUP, and EIO on every later write). Prints "exit N" or "signal N" at the end.
"""
import os
import pty
import select
import sys

pid, master = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])

out = sys.stdout.buffer
out.write(f"pid {pid}\n".encode())
out.flush()
watched = [master, sys.stdin.fileno()]
while master in watched:
    ready, _, _ = select.select(watched, [], [])
    if master in ready:
        try:
            data = os.read(master, 65536)
        except OSError:
            data = b""
        if data:
            out.write(data)
            out.flush()
        else:
            watched.remove(master)
    if sys.stdin.fileno() in ready:
        line = sys.stdin.readline()
        if line.strip() == "hangup" or line == "":
            os.close(master)
            watched = []

_, status = os.waitpid(pid, 0)
out.write(("\nexit %d\n" % os.WEXITSTATUS(status) if os.WIFEXITED(status) else "\nsignal %d\n" % os.WTERMSIG(status)).encode())
out.flush()
