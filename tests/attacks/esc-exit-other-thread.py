# attack: end the run from a thread that is not the interpreter's main thread (os._exit() there calls exit_group() with another thread id than the pid the launcher watches), while the main thread sleeps
# expect: the caller gets the status the thread gave, 5, from the launcher's waitpid() (the early word is only taken from the main thread); no timeout
# check: r.exit_code === 5 && r.timed_out === false && r.signal === null
# check: r.stdout === 'THREAD\n'
# timeout: 20
import os, threading, time


def end():
    print("THREAD", flush=True)
    os._exit(5)


threading.Thread(target=end).start()
time.sleep(30)
print("MAIN WOKE", flush=True)
