# attack: leave IPC objects for the next run (esc-m-find-leftovers looks for them): SysV shared memory, message queue and semaphore set under a fixed key, mode 0666, with data in them; a POSIX message queue with a message; POSIX shared memory
# expect: all are created (they are this run's own: PrivateIPC=yes, RemoveIPC=yes) and gone for the next runs
# check: r.exit_code === 0 && (r.stdout.match(/^LEFT /gm) || []).length === 5
import ctypes, ctypes.util, errno, os

KEY = 0x6d637061  # "mcpa"
IPC_CREAT = 0o1000
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p

def err():
    return errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())

shmid = libc.shmget(KEY, 4096, IPC_CREAT | 0o666)
if shmid >= 0:
    addr = libc.shmat(shmid, None, 0)
    if addr not in (None, ctypes.c_void_p(-1).value):
        ctypes.memmove(addr, b"mcpatkb-shm", 11)
        libc.shmdt(ctypes.c_void_p(addr))
    print("LEFT SysV shm key %#x id %d" % (KEY, shmid))
else:
    print("INFO shmget: %s" % err())

msqid = libc.msgget(KEY, IPC_CREAT | 0o666)
if msqid >= 0:
    msg = ctypes.create_string_buffer(ctypes.sizeof(ctypes.c_long) + 16)
    ctypes.memmove(msg, (1).to_bytes(ctypes.sizeof(ctypes.c_long), "little") + b"mcpatkb-msg", ctypes.sizeof(ctypes.c_long) + 11)
    libc.msgsnd(msqid, msg, 11, 0o4000)  # IPC_NOWAIT
    print("LEFT SysV msg queue key %#x id %d" % (KEY, msqid))
else:
    print("INFO msgget: %s" % err())

semid = libc.semget(KEY, 1, IPC_CREAT | 0o666)
if semid >= 0:
    print("LEFT SysV semaphore set key %#x id %d" % (KEY, semid))
else:
    print("INFO semget: %s" % err())

rt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
mqd = rt.mq_open(b"/mcpatkb-mq", os.O_CREAT | os.O_RDWR, 0o666, None)
if mqd >= 0:
    rt.mq_send(mqd, b"mcpatkb-mq", 10, 0)
    print("LEFT POSIX mq /mcpatkb-mq")
else:
    print("INFO mq_open: %s" % err())

fd = os.open("/dev/shm/mcpatkb-posix-shm", os.O_CREAT | os.O_RDWR, 0o666)
os.write(fd, b"mcpatkb-posix-shm")
os.fchmod(fd, 0o666)
os.close(fd)
print("LEFT POSIX shm /mcpatkb-posix-shm")
