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
# With --session it runs call after call in one __main__ (launch-session.h),
# so globals, imports and /tmp persist; a call's SystemExit or exception ends
# the call, not the session.
#
# Our code only until the program starts: from then on this process is the
# program's, and the parent trusts nothing it says.
import os
import sys

CONTROL_FD = 3


def _send(sock, text):
    sock.send(text.encode("utf-8", "replace"))


def _preload(names):
    """Imports names. Returns those that came, those that failed, and the
    top-level modules outside the standard library that the imports loaded
    or looked for in vain (an optional dependency the module went without):
    packages that provide one of those would not be seen as a cold
    interpreter sees them (launch-run.c, run_packages)."""
    ok, failed, missed = [], [], set()

    class Missed:
        """Last on sys.meta_path while the preload runs: a top-level name
        that no finder found."""
        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            if path is None:
                missed.add(fullname)
            return None

    before = set(sys.modules)
    sys.meta_path.append(Missed)
    for name in names:
        try:
            __import__(name)
            ok.append(name)
        except BaseException as e:  # anything a module raises at import, SystemExit included
            failed.append("%s:%s" % (name, type(e).__name__))
    sys.meta_path.remove(Missed)
    seen = {m.partition(".")[0] for m in sys.modules if m not in before} | missed
    return ok, failed, sorted(seen - set(sys.stdlib_module_names) - set(sys.builtin_module_names))


def _site_dirs(prefix):
    """The run's packages site: the user site of PYTHONUSERBASE=prefix (the
    code's environment has it: every interpreter the code starts without -I
    or -s adds it, and its .pth files), on Debian
    P/lib/python3.X/site-packages, and its scripts (on the code's PATH). The
    same computation as site_dirs() of mcp-exec-install.py: both must agree
    (launch-packages.h)."""
    import sysconfig
    try:
        scheme = sysconfig.get_preferred_scheme("user")
    except AttributeError:                      # before 3.10
        scheme = "%s_user" % os.name
    v = {"userbase": prefix}
    out = []
    for key in ("purelib", "platlib"):
        d = sysconfig.get_path(key, scheme, vars=v)
        if d not in out:
            out.append(d)
    return out, sysconfig.get_path("scripts", scheme, vars=v)


# The .pth lines _add_sites() took already, the entries it added, and each
# directory's mtime when it was read (a .pth is only ever written by rename:
# an unchanged directory has nothing new).
_SITE_SEEN = set()
_SITE_ADDED = []
_SITE_MTIME = {}


def _add_sites(dirs):
    """Does for this interpreter (-I: no user site) what site.py does at the
    start of any other of the run: those of dirs that exist go on sys.path,
    then the lines of their .pth files, in the files' name order (a
    directory, or an "import" line run), here only the lines not taken
    before (a later call of a session adds some). All of it after the
    standard library and before the system's packages, as for a user site.
    True if anything was new."""
    before = list(sys.path)
    new = False
    for d in dirs:
        try:
            mtime = os.stat(d).st_mtime_ns
        except OSError:
            continue
        if d in sys.path and _SITE_MTIME.get(d) == mtime:
            continue
        if d not in sys.path:
            sys.path.append(d)
            new = True
        try:
            names = sorted(n for n in os.listdir(d) if n.endswith(".pth") and not n.startswith("."))
        except OSError:
            continue
        _SITE_MTIME[d] = mtime
        for n in names:
            try:
                with open(os.path.join(d, n), encoding="utf-8", errors="surrogateescape") as f:
                    lines = f.read().splitlines()
            except OSError:
                continue
            for line in lines:
                if not line.strip() or line.startswith("#") or (n, line) in _SITE_SEEN:
                    continue
                _SITE_SEEN.add((n, line))
                new = True
                if line.startswith(("import ", "import\t")):
                    try:
                        exec(line)
                    except Exception:
                        pass    # as site.py: the line is skipped
                    continue
                p = os.path.abspath(os.path.join(d, line.rstrip()))
                if p not in sys.path and os.path.exists(p):
                    sys.path.append(p)
    added = [p for p in sys.path if p not in before]
    if added:
        rest = [p for p in sys.path if p not in added]
        ours = [k for k, p in enumerate(rest) if p in _SITE_ADDED]
        i = ours[-1] + 1 if ours else next((k for k, p in enumerate(rest) if p.endswith(("/site-packages",
                                                                                          "/dist-packages"))),
                                           len(rest))
        sys.path[:] = rest[:i] + added + rest[i:]
        _SITE_ADDED.extend(added)
    return new


def _packages_go(dirs):
    """At "go": what the launcher installed for this run or call is
    importable, also into a directory an earlier call's imports already
    looked at."""
    if _add_sites(dirs) or any(os.path.isdir(d) for d in dirs):
        import importlib
        importlib.invalidate_caches()


def _packages_setup(prefix):
    """Packages (issues 23, 41): the launcher installs them into the run's
    user site (the code's environment has PYTHONUSERBASE and PIP_USER: a
    pip install in the code goes there too), their scripts are on PATH, an
    import that nothing else found is tried again once something new is
    there. Creates nothing: /tmp stays empty until something is installed.
    Returns the directories, for _add_sites() at "go"."""
    dirs, scripts = _site_dirs(prefix)
    # Not in the environment the launcher gave: the interpreter found its
    # own sys.executable on PATH before anything could be installed there.
    os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")

    class PackagesFinder:
        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            if path is not None or not _add_sites(dirs):
                return None
            import importlib
            import importlib.machinery
            importlib.invalidate_caches()
            return importlib.machinery.PathFinder.find_spec(fullname)

    # Last: consulted only when every other finder failed.
    sys.meta_path.append(PackagesFinder)
    return dirs


def _tools_path():
    """Code mode (issue 40): the mcp_servers package, in python/ next to this
    file (installed with it, read-only as it is), importable by the code:
    on sys.path after the standard library and before the site packages
    (where _add_sites() puts a run's own), so that nothing installed shadows
    it. Only the path: nothing is imported until the code imports it."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python")
    if d in sys.path or not os.path.isdir(d):
        return
    i = next((k for k, p in enumerate(sys.path) if p.endswith(("/site-packages", "/dist-packages"))), len(sys.path))
    sys.path.insert(i, d)


def _figure_hooks(ctl, state):
    """plt.show() hands every open figure to the parent (a PNG in a memfd on
    the control socket) and closes it; at exit (a session: at the end of the
    call) the figures still open go too, in the order they were created. Past
    state["max"] of them they are only closed; state["n"] counts them."""
    import socket

    def save_all():
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        for num in plt.get_fignums():
            try:
                if state["n"] < state["max"]:
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


def _figures_done(ctl, state):
    """Says how many figures were left out past the limit (once, at the end:
    one message however many, so the socket never fills)."""
    if state["n"] > state["max"]:
        try:
            _send(ctl, "figskip %d" % (state["n"] - state["max"]))
        except OSError:
            pass


def _finish(status, ctl):
    """Ends as the interpreter would, but without tearing down every module:
    with numpy, pandas and matplotlib in memory that alone takes a few hundred
    milliseconds, for nothing, since the process is gone a moment later.
    Non-daemon threads are waited for, atexit functions run, output is
    flushed, as at a normal exit. Then the program's stdin, stdout and stderr
    are closed (the caller sees their end at once) and the parent hears
    "done": only that nothing more will come on the control socket. The
    program could send it too, so the status the caller gets is the one
    os._exit() below gives exit_group(), as the parent hears it from the
    kernel (launch-exitwatch.h), or else what its waitpid() says."""
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
    try:
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        _send(ctl, "done %d" % status)
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


def _report_exception(path):
    """The traceback from the program's first frame on, as "python3 script.py"
    prints it. Returns the exception."""
    etype, value, tb = sys.exc_info()
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    value.__traceback__ = tb
    try:
        if sys.excepthook is sys.__excepthook__:
            # The traceback module, not the built-in hook: it reads a
            # session's calls from linecache, which has no file to open.
            import traceback
            traceback.print_exception(etype, value, tb)
        else:
            sys.excepthook(etype, value, tb)
    except BaseException:
        pass
    return value


def _run(code_fd, ctl, max_figures):
    import builtins
    import types

    path = "/proc/self/fd/%d" % code_fd
    with open(path, "rb") as f:
        source = f.read()
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": path, "__builtins__": builtins, "__cached__": None})
    # multiprocessing's spawn would have each child run the main script again from
    # __file__, and /proc/self/fd/3 in a child is another file (a pipe of its parent's):
    # it hung there. A spec named __main__ makes the children skip that, as for
    # `python -c`: targets from modules work, the code's own functions are not found
    # in a child (an AttributeError there, not a hang).
    import importlib.machinery
    main.__spec__ = importlib.machinery.ModuleSpec("__main__", None)
    sys.modules["__main__"] = main
    sys.argv = [path]
    figures = {"n": 0, "max": max_figures}
    save_figures = _figure_hooks(ctl, figures)
    status = 0
    try:
        try:
            code = compile(source, path, "exec", dont_inherit=True)
            del source
            exec(code, main.__dict__)
        finally:
            save_figures()
            _figures_done(ctl, figures)
    except SystemExit as e:
        status = _exit_status(e.code)
    except BaseException:
        value = _report_exception(path)
        if isinstance(value, KeyboardInterrupt):
            import signal
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        status = 1
    _finish(status, ctl)


def _session_call(ctl, main, state, n, fds):
    """One call of a session: its stdin, stdout, stderr and code in fds. The
    code runs in the session's __main__; returns its "exit status" (negative:
    as if killed by that signal)."""
    import linecache
    import shutil
    import signal

    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
        os.close(fd)
    # The memfd's offset is where the parent stopped writing.
    os.lseek(fds[3], 0, os.SEEK_SET)
    with open(fds[3], "rb") as f:
        source = f.read()
    # /tmp/outputs was returned after the last call; this call's is its own.
    shutil.rmtree("/tmp/outputs", ignore_errors=True)
    path = "<call %d>" % n
    try:
        text = source.decode("utf-8")
        # Tracebacks of this call, and later ones through its functions, show its lines.
        linecache.cache[path] = (len(text), None, text.splitlines(True), path)
    except UnicodeDecodeError:
        pass
    status = 0
    try:
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            try:
                exec(compile(source, path, "exec", dont_inherit=True), main.__dict__)
            finally:
                del source
                state["save"]()
                _figures_done(ctl, state)
        except SystemExit as e:
            status = _exit_status(e.code)
        except BaseException:
            value = _report_exception(path)
            status = -signal.SIGINT if isinstance(value, KeyboardInterrupt) else 1
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    except KeyboardInterrupt:
        # The interrupt came as the call ended: the call was over anyway.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return status


def _session(ctl, state, sites):
    """Calls, one after the other, in one __main__ until the parent closes the
    control socket. Between calls stdin, stdout and stderr are /dev/null: what
    a thread prints then is dropped, never given to the next caller."""
    import builtins
    import signal
    import socket
    import types

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": builtins})
    sys.modules["__main__"] = main
    sys.argv = [""]
    state["save"] = _figure_hooks(ctl, state)
    null = os.open("/dev/null", os.O_RDWR)
    me = os.getpid()
    n = 0
    while True:
        msg, fds, _, _ = socket.recv_fds(ctl, 64, 4)
        if not msg:
            os._exit(0)
        if msg == b"tools" and len(fds) == 1 and "MCP_EXEC_TOOLS_FD" not in os.environ:
            # Code mode: the session's connection to the gateway, before its
            # first call, for all of them (and what they start).
            os.set_inheritable(fds[0], True)
            os.environ["MCP_EXEC_TOOLS_FD"] = str(fds[0])
            continue
        if not msg.startswith(b"go ") or len(fds) != 4:
            for fd in fds:
                os.close(fd)
            continue
        n += 1
        # What the launcher installed for this call.
        _packages_go(sites)
        state["n"], state["max"] = 0, int(msg[3:])
        status = _session_call(ctl, main, state, n, fds)
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except BaseException:
                pass
        if os.getpid() != me:
            # A child the call forked ran off the end of its code: its
            # program is over, as a script's would be. It must not say
            # "done" nor wait for calls: the session is its parent's.
            os._exit(status if status >= 0 else 1)
        for target in (0, 1, 2):
            os.dup2(null, target)
        _send(ctl, "done %d" % status)


def _warm_up():
    """What every run needs, done in a warm unit before "ready" instead of
    on the caller's time (measured outside the sandbox, `pass` from "go"
    to "done": 5.0 ms without it, 1.3 ms with it; the imports were about
    1.5 ms, the first compile() in a process about 1 ms; the data stack
    imports most of them anyway). Then what the interpreter and its preload
    made goes to the collector's permanent generation: the program's
    collections never walk the data stack's hundreds of thousands of
    objects (what the imports left as garbage is collected first)."""
    import atexit
    import builtins
    import gc
    import importlib.machinery
    import threading
    import traceback
    import types
    del atexit, builtins, importlib, threading, traceback, types
    compile(b"pass\n", "<warm-up>", "exec", dont_inherit=True)
    gc.collect()
    gc.freeze()


def main():
    import socket

    preload, session, sites = [], False, []
    _tools_path()
    for a in sys.argv[1:]:
        if a.startswith("--preload="):
            preload = [m for m in a[len("--preload="):].split(",") if m]
        elif a == "--session":
            session = True
        elif a.startswith("--packages="):
            sites = _packages_setup(a[len("--packages="):])

    ctl = socket.socket(fileno=CONTROL_FD)
    ok, failed, seen = _preload(preload)
    if preload:
        # A warm unit: this is off the caller's time. A cold unit's
        # interpreter starts on it, and imports what it needs as it goes.
        _warm_up()
    seen = ",".join(seen) or "-"
    # The launcher reads up to 64 KiB (launch-interp.c); past that: "*", any module.
    _send(ctl, "ready %s %s %s" % (",".join(ok) or "-", ",".join(failed) or "-", seen if len(seen) < 60000 else "*"))
    if session:
        # The control socket closed on exec, so no program the code starts
        # holds it.
        ctl = socket.socket(fileno=os.dup(ctl.detach()))
        os.close(CONTROL_FD)
        del ok, failed, preload, seen
        _session(ctl, {"n": 0, "max": 0}, sites)

    # The run: stdin, stdout, stderr, the code, maybe its tools connection
    # (code mode); "go N" with the figure limit.
    msg, fds, _, _ = socket.recv_fds(ctl, 64, 5)
    if not msg.startswith(b"go ") or len(fds) not in (4, 5):
        os._exit(125)
    if len(fds) == 5:
        # The gateway, for mcp_servers: inherited by what the code starts
        # (one run, one connection), found by the variable. Above the fds
        # set up below (0 to CONTROL_FD), which were open as it came.
        if fds[4] <= CONTROL_FD:
            os._exit(125)
        os.set_inheritable(fds[4], True)
        os.environ["MCP_EXEC_TOOLS_FD"] = str(fds[4])
    max_figures = int(msg[3:])
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
        os.close(fd)
    # The code at fd 3, as a script at /proc/self/fd/3 always was; the
    # control socket (for figures) elsewhere, closed on exec.
    ctl = socket.socket(fileno=os.dup(ctl.detach()))
    os.dup2(fds[3], CONTROL_FD, inheritable=False)
    os.close(fds[3])
    del msg, fds, ok, failed, preload, seen
    # What the launcher installed for this run.
    _packages_go(sites)
    _run(CONTROL_FD, ctl, max_figures)


main()
