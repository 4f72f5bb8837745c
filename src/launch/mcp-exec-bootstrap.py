# SPDX-License-Identifier: LGPL-2.1-or-later
# mcp-exec-bootstrap: the interpreter side of every run, started by the
# launcher's parent (mcp-exec-launch) inside the run's sandbox, before any code
# is known. It imports what it is told to preload (a warm unit of the pool:
# numpy, pandas, matplotlib... already in memory when the code comes), says it
# is ready on its control socket, then waits for the run: the program's stdin,
# stdout and stderr and a sealed memfd with the code arrive as file
# descriptors. It runs the code as the interpreter runs a script (as
# __main__, tracebacks without our frames, the exit status Python would
# give), and saves matplotlib figures for the parent to return.
#
# Our code only until the program starts: from then on this process is the
# program's, and the parent trusts nothing it says.
import os
import sys

CONTROL_FD = 3


def _send(sock, text):
    sock.send(text.encode("utf-8", "replace"))


def _preload(names):
    ok, failed = [], []
    for name in names:
        try:
            __import__(name)
            ok.append(name)
        except BaseException as e:  # anything a module raises at import, SystemExit included
            failed.append("%s:%s" % (name, type(e).__name__))
    return ok, failed


def _figure_hooks(ctl, max_figures):
    """plt.show() hands every open figure to the parent (a PNG in a memfd on
    the control socket) and closes it; at exit the figures still open go too,
    in the order they were created. Past max_figures they are only closed."""
    import socket
    state = {"n": 0}

    def save_all():
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        for num in plt.get_fignums():
            try:
                if state["n"] < max_figures:
                    fd = os.memfd_create("mcp-exec-figure", os.MFD_CLOEXEC)
                    try:
                        with open(fd, "wb", closefd=False) as f:
                            plt.figure(num).savefig(f, format="png", dpi=100)
                        socket.send_fds(ctl, [b"fig"], [fd])
                    finally:
                        os.close(fd)
                state["n"] += 1
                plt.close(num)
            except Exception:
                pass

    def patch(plt):
        def show(*args, **kwargs):
            save_all()
        plt.show = show

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        patch(plt)
    else:
        # Patched when the program imports pyplot, without importing it
        # ourselves (nor importlib.abc: a plain finder costs nothing).
        import importlib.machinery

        class Finder:
            @classmethod
            def find_spec(cls, fullname, path, target=None):
                if fullname != "matplotlib.pyplot":
                    return None
                sys.meta_path.remove(cls)
                spec = importlib.machinery.PathFinder.find_spec(fullname, path)
                if spec is None or spec.loader is None:
                    return spec
                loader = spec.loader
                exec_module = loader.exec_module

                def exec_and_patch(module):
                    exec_module(module)
                    patch(module)
                loader.exec_module = exec_and_patch
                return spec

        sys.meta_path.insert(0, Finder)
    return save_all


def _finish(status):
    """Ends as the interpreter would, but without tearing down every module:
    with numpy, pandas and matplotlib in memory that alone takes a few hundred
    milliseconds, for nothing, since the process is gone a moment later.
    Non-daemon threads are waited for, atexit functions run, output is
    flushed, as at a normal exit."""
    try:
        import threading
        threading._shutdown()
    except BaseException:
        pass
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    os._exit(status)


def _exit_status(code):
    """The status "raise SystemExit(code)" gives, as the interpreter does it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(str(code) + "\n")
    except BaseException:
        pass
    return 1


def _run(code_fd, ctl, max_figures):
    import builtins
    import types

    path = "/proc/self/fd/%d" % code_fd
    with open(path, "rb") as f:
        source = f.read()
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": path, "__builtins__": builtins, "__cached__": None})
    sys.modules["__main__"] = main
    sys.argv = [path]
    save_figures = _figure_hooks(ctl, max_figures)
    status = 0
    try:
        try:
            code = compile(source, path, "exec", dont_inherit=True)
            del source
            exec(code, main.__dict__)
        finally:
            save_figures()
    except SystemExit as e:
        status = _exit_status(e.code)
    except BaseException:
        etype, value, tb = sys.exc_info()
        # Tracebacks start at the program, as with "python3 script.py".
        while tb is not None and tb.tb_frame.f_code.co_filename != path:
            tb = tb.tb_next
        value.__traceback__ = tb
        try:
            sys.excepthook(etype, value, tb)
        except BaseException:
            pass
        if isinstance(value, KeyboardInterrupt):
            import signal
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        status = 1
    _finish(status)


def main():
    import socket

    preload = []
    for a in sys.argv[1:]:
        if a.startswith("--preload="):
            preload = [m for m in a[len("--preload="):].split(",") if m]

    ctl = socket.socket(fileno=CONTROL_FD)
    ok, failed = _preload(preload)
    _send(ctl, "ready %s %s" % (",".join(ok) or "-", ",".join(failed) or "-"))

    # The run: stdin, stdout, stderr, the code; "go N" with the figure limit.
    msg, fds, _, _ = socket.recv_fds(ctl, 64, 4)
    if not msg.startswith(b"go ") or len(fds) != 4:
        os._exit(125)
    max_figures = int(msg[3:])
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
        os.close(fd)
    # The code at fd 3, as a script at /proc/self/fd/3 always was; the
    # control socket (for figures) elsewhere, closed on exec.
    ctl = socket.socket(fileno=os.dup(ctl.detach()))
    os.dup2(fds[3], CONTROL_FD, inheritable=False)
    os.close(fds[3])
    del msg, fds, ok, failed, preload
    _run(CONTROL_FD, ctl, max_figures)


main()
