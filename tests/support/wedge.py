# Wedge a real llama-server's engine loop: stop ONLY thread TID (the main thread, TID = PID, which
# runs start_loop and does the decoding) and hold it, while its HTTP threads keep answering.
# usage: python3 wedge.py TID SECONDS
# PTRACE_SEIZE + PTRACE_INTERRUPT stop one thread without a SIGSTOP (a group stop would freeze the
# HTTP threads too, as gdb's attach does, and can leave the process stopped after detach).
# Needs ptrace rights on the process (root, or the same user with kernel.yama.ptrace_scope = 0).
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long
PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH, WALL = 0x4206, 0x4207, 17, 0x40000000
tid, secs = int(sys.argv[1]), float(sys.argv[2])
def chk(r, what):
    if r != 0: sys.exit(f"{what} failed: {os.strerror(ctypes.get_errno())}")
chk(libc.ptrace(PTRACE_SEIZE, tid, None, None), "SEIZE")
chk(libc.ptrace(PTRACE_INTERRUPT, tid, None, None), "INTERRUPT")
_, status = os.waitpid(tid, WALL)
print(f"stopped tid {tid} status=0x{status:x}", flush=True)
time.sleep(secs)
chk(libc.ptrace(PTRACE_DETACH, tid, None, None), "DETACH")
print("released", flush=True)
